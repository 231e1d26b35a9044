/** The console: sign in, then the organization's pages under /console/. */
import './styles/base.css';
import './styles/shell.css';
import './styles/content.css';
import './styles/phones.css';
import type { JSX } from 'preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import {
  ApiError,
  get,
  post,
  setCsrfToken,
  setForbiddenHandler,
  setUnauthorizedHandler,
} from './api.js';
import { AppContext, type AppState } from './app.js';
import { connectLive, setStreamRefusedHandler, useLive, useLiveState } from './live.js';
import { AcceptInvitation, SignIn } from './pages/auth.js';
import { OverviewPage, PrintersPage, StationsPage } from './pages/fleet.js';
import { JobPage, JobsPage } from './pages/jobs.js';
import { KeysPage } from './pages/keys.js';
import { LocationsPage } from './pages/locations.js';
import { OrganizationsPage, useOrganizationsLink } from './pages/orgs.js';
import { PeoplePage, SettingsPage } from './pages/people.js';
import { PoolsPage } from './pages/pools.js';
import { EndpointPage, WebhooksPage } from './pages/webhooks.js';
import { messageOf } from './resource.js';
import { Link, navigate, reloadPage, usePath, visitCount } from './router.js';
import type { Session } from './types.js';
import { ErrorText } from './ui.js';

/** The menu; `Organizations` only where useOrganizationsLink says (a platform's). */
const NAV: { href: string; label: string }[] = [
  { href: '/', label: 'Overview' },
  { href: '/jobs', label: 'Jobs' },
  { href: '/printers', label: 'Printers' },
  { href: '/pools', label: 'Pools' },
  { href: '/stations', label: 'Stations' },
  { href: '/locations', label: 'Locations' },
  { href: '/keys', label: 'API keys' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/organizations', label: 'Organizations' },
  { href: '/people', label: 'People' },
  { href: '/settings', label: 'Settings' },
];

function Page(props: { path: string }): JSX.Element {
  const p = props.path.replace(/\/+$/, '') || '/';
  const [, first, second] = p.split('/');
  switch (first) {
    case undefined:
    case '':
      return <OverviewPage />;
    case 'jobs':
      return second ? <JobPage id={second} /> : <JobsPage />;
    case 'printers':
      return <PrintersPage />;
    case 'pools':
      return <PoolsPage />;
    case 'stations':
      return <StationsPage />;
    case 'locations':
      return <LocationsPage />;
    case 'keys':
      return <KeysPage />;
    case 'webhooks':
      return second ? <EndpointPage id={second} /> : <WebhooksPage />;
    case 'organizations':
      return <OrganizationsPage />;
    case 'people':
      return <PeoplePage />;
    case 'settings':
      return <SettingsPage />;
    default:
      return (
        <>
          <h1>Not found</h1>
          <p>
            The console has no page here. <Link href="/">Go to the overview</Link>.
          </p>
        </>
      );
  }
}

function LiveIndicator(): JSX.Element {
  const state = useLiveState();
  const text = state === 'live' ? 'Live' : state === 'connecting' ? 'Connecting…' : 'Reconnecting…';
  return (
    <span class={`live live-${state}`} role="status" title="Lists update as things change">
      {text}
    </span>
  );
}

function Shell(props: { app: AppState; path: string }): JSX.Element {
  const { app, path } = props;
  const [menuOpen, setMenuOpen] = useState(false);
  const [signOutError, setSignOutError] = useState('');
  const section = `/${path.split('/')[1] ?? ''}`;
  const organizations = useOrganizationsLink(app.org);
  const nav = NAV.filter((n) => n.href !== '/organizations' || organizations);
  useEffect(() => setMenuOpen(false), [path]);
  return (
    <AppContext.Provider value={app}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">Spool</span>
        {app.session.orgs.length > 1 ? (
          <label class="org-select">
            <span class="visually-hidden">Organization</span>
            <select value={app.org.id} onChange={(e) => app.setOrg(e.currentTarget.value)}>
              {app.session.orgs.map((o) => (
                <option key={o.id} value={o.id}>
                  {o.name}
                </option>
              ))}
            </select>
          </label>
        ) : (
          <span class="org-name">{app.org.name}</span>
        )}
        <LiveIndicator />
        <button
          type="button"
          class="menu-button secondary"
          aria-expanded={menuOpen}
          aria-controls="nav"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          Menu
        </button>
        <div class="who">
          <span>
            {app.session.person.display_name} <span class="muted small">({app.org.role})</span>
          </span>
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setSignOutError('');
              app.signOut().catch((err) => setSignOutError(messageOf(err)));
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      {signOutError ? (
        <div class="signout-error">
          <ErrorText error={`You are still signed in: ${signOutError} Try again.`} />
        </div>
      ) : null}
      <div class="layout">
        <nav id="nav" class={menuOpen ? 'nav open' : 'nav'} aria-label="Console">
          <ul>
            {nav.map((n) => (
              <li key={n.href}>
                <Link href={n.href} current={section === n.href}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabIndex={-1}>
          <Page key={visitCount()} path={path} />
        </main>
      </div>
    </AppContext.Provider>
  );
}

function App(): JSX.Element {
  const path = usePath();
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  const [orgId, setOrgId] = useState<string>(() => localStorage.getItem('spool.org') ?? '');

  const signedIn = (s: Session) => {
    setCsrfToken(s.csrf_token);
    setSession(s);
    setNotice('');
  };
  // A role changed by someone else (or a membership ended) shows when the session is read
  // again: when the live stream says the person's own role changed, after a refusal, the live
  // stream's included, and whenever the tab comes back into view. A session that ended answers
  // 401, which the unauthorized handler takes to the sign-in page.
  const rereadSession = () =>
    get<Session>('/console/v1/session').then((s) => {
      setCsrfToken(s.csrf_token);
      setSession((current) => (current ? s : current));
    });
  const reread = () => void rereadSession().catch(() => undefined);
  useLive('member.updated', (ev) => {
    const member = ev.data.data?.member as { person_id?: unknown } | undefined;
    if (session && member?.person_id === session.person.id) reread();
  });

  useEffect(() => {
    setUnauthorizedHandler(() => {
      connectLive(null);
      setSession((s) => {
        if (s) setNotice('Your session ended; sign in again.');
        return null;
      });
    });
    setForbiddenHandler(reread);
    // The page shown may be of an organization the person was removed from: it is read again.
    setStreamRefusedHandler(() => rereadSession().then(reloadPage));
    const onVisible = () => {
      if (document.visibilityState === 'visible') reread();
    };
    document.addEventListener('visibilitychange', onVisible);
    if (path === '/invitation') {
      setSession(null);
      return;
    }
    get<Session>('/console/v1/session')
      .then(signedIn)
      .catch((err) => {
        if (err instanceof ApiError && err.status === 401) setSession(null);
        else setError(messageOf(err));
      });
  }, []);

  const org = session?.orgs.find((o) => o.id === orgId) ?? session?.orgs[0];
  // Opened (or switched) as the pages render, so that they hear from the first event.
  if (session) connectLive(org?.id ?? null);

  if (path === '/invitation' && !session) {
    return (
      <AcceptInvitation
        onSignedIn={(s, joined) => {
          // Show the organization just joined, not the one chosen last.
          if (joined) {
            localStorage.setItem('spool.org', joined);
            setOrgId(joined);
          }
          signedIn(s);
          navigate('/', true);
        }}
      />
    );
  }
  if (session === undefined) {
    return (
      <main class="auth">
        <div class="auth-card">
          <p class="brand">Spool</p>
          {error ? <ErrorText error={error} /> : <p class="muted">Loading…</p>}
        </div>
      </main>
    );
  }
  if (session === null) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          signedIn(s);
          if (path === '/invitation' || path === '/sign-in') navigate('/', true);
        }}
      />
    );
  }
  if (!org) {
    return (
      <main class="auth">
        <div class="auth-card">
          <p class="brand">Spool</p>
          <h1>No organization</h1>
          <p>You are not a member of any organization. Ask for an invitation.</p>
        </div>
      </main>
    );
  }
  const app: AppState = {
    session,
    org,
    setOrg(id) {
      localStorage.setItem('spool.org', id);
      setOrgId(id);
      navigate('/');
    },
    renamedOrg(name) {
      setSession({
        ...session,
        orgs: session.orgs.map((o) => (o.id === org.id ? { ...o, name } : o)),
      });
    },
    async signOut() {
      try {
        await post('/console/v1/sign-out');
      } catch (err) {
        // Signed out already (401) is done; otherwise the session may still be valid, and only
        // the server can clear its cookie: the person must know and try again.
        if (!(err instanceof ApiError && err.status === 401)) throw err;
      }
      connectLive(null);
      setCsrfToken('');
      setSession(null);
      setNotice('You are signed out.');
      navigate('/', true);
    },
  };
  return <Shell app={app} path={path} />;
}

const root = document.getElementById('app');
if (root) render(<App />, root);
