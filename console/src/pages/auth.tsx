/** Signing in, and accepting an invitation (`/console/invitation#TOKEN`). */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, get, post } from '../api.js';
import { Field, Form, Radios } from '../forms.js';
import { useAction, useResource } from '../resource.js';
import type { InvitationInfo, Session } from '../types.js';
import { ErrorText, Time } from '../ui.js';

const ACCOUNT_CHOICES = [
  { value: 'new', label: 'No, I am new to Spool' },
  { value: 'existing', label: 'Yes, I have an account' },
] as const;

export function SignIn(props: { onSignedIn(s: Session): void; notice?: string }): JSX.Element {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction(async () => {
    // Signing in again when Spool was busy is harmless: at worst one more session, never used.
    const s = await post<Session>('/console/v1/sign-in', { email, password }, { retry: true });
    props.onSignedIn(s);
  });
  return (
    <main class="auth">
      <div class="auth-card">
        <p class="brand">Spool</p>
        <h1>Sign in to the console</h1>
        {props.notice ? <p class="notice">{props.notice}</p> : null}
        <Form onSubmit={action.run}>
          <Field
            label="Email"
            type="email"
            name="email"
            autocomplete="username"
            required
            value={email}
            onValue={setEmail}
          />
          <Field
            label="Password"
            type="password"
            name="password"
            autocomplete="current-password"
            required
            value={password}
            onValue={setPassword}
          />
          <ErrorText error={action.error} />
          <button type="submit" disabled={action.busy}>
            Sign in
          </button>
        </Form>
        <p class="muted small">
          New here? Ask your operator or an administrator of your organization for an invitation.
        </p>
      </div>
    </main>
  );
}

/**
 * Accepting an invitation. A person new to Spool chooses a display name and a password; a person
 * who already has an account with the invitation's email gives its password only, as Spool keeps
 * their name (the page knows them when they are signed in here, and asks otherwise).
 */
export function AcceptInvitation(props: {
  onSignedIn(s: Session, orgId: string): void;
}): JSX.Element {
  const token = decodeURIComponent(location.hash.replace(/^#/, ''));
  const info = useResource(
    () =>
      token
        ? get<InvitationInfo>(`/console/v1/invitations/${encodeURIComponent(token)}`)
        : Promise.reject(
            new Error('This link has no invitation in it; open the whole link you were sent.'),
          ),
    [token],
  );
  const session = useResource(() => get<Session>('/console/v1/session').catch(() => null), []);
  const inv = info.data?.invitation;
  const signedInAs =
    inv && session.data?.person.email === inv.email ? session.data.person : undefined;
  const [chosen, setChosen] = useState<'new' | 'existing'>('new');
  const [notice, setNotice] = useState('');
  const existing = signedInAs !== undefined || chosen === 'existing';
  const [displayName, setDisplayName] = useState('');
  const [password, setPassword] = useState('');
  const choose = (next: 'new' | 'existing', why = '') => {
    setChosen(next);
    setNotice(why);
    action.clear();
  };
  const action = useAction(async () => {
    try {
      const s = await post<Session>(
        `/console/v1/invitations/${encodeURIComponent(token)}/accept`,
        existing ? { password } : { display_name: displayName, password },
      );
      props.onSignedIn(s, inv?.org.id ?? '');
    } catch (err) {
      // The answer says which it is when the choice was wrong: ask for what is missing.
      if (err instanceof ApiError && existing && err.param === 'display_name') {
        choose(
          'new',
          'Spool has no account with this email yet: choose a display name and a password.',
        );
        return;
      }
      if (err instanceof ApiError && !existing && err.status === 401) choose('existing');
      throw err;
    }
  });
  return (
    <main class="auth">
      <div class="auth-card">
        <p class="brand">Spool</p>
        <h1>Accept your invitation</h1>
        {info.loading && !inv ? <p class="muted">Checking the invitation…</p> : null}
        <ErrorText error={info.error} />
        {inv && !session.loading ? (
          <>
            <p>
              You are invited to <strong>{inv.org.name}</strong> as <strong>{inv.role}</strong>,
              with the email <strong>{inv.email}</strong>. The invitation is valid until{' '}
              <Time at={inv.expires_at} />.
            </p>
            <Form onSubmit={action.run}>
              {signedInAs ? (
                <p>
                  You are signed in as <strong>{signedInAs.display_name}</strong>: enter your
                  password to join {inv.org.name}.
                </p>
              ) : (
                <Radios
                  legend="Do you have a Spool account with this email?"
                  name="account"
                  choices={ACCOUNT_CHOICES}
                  value={existing ? 'existing' : 'new'}
                  onChange={(v) => choose(v)}
                />
              )}
              {notice ? (
                <p class="notice" role="status">
                  {notice}
                </p>
              ) : null}
              {existing ? null : (
                <Field
                  label="Display name"
                  name="display_name"
                  autocomplete="name"
                  required
                  maxLength={200}
                  value={displayName}
                  onValue={setDisplayName}
                />
              )}
              <Field
                label="Password"
                type="password"
                name="password"
                autocomplete={existing ? 'current-password' : 'new-password'}
                required
                minLength={existing ? undefined : 10}
                maxLength={200}
                aria-describedby="password-hint"
                value={password}
                onValue={setPassword}
              />
              <p id="password-hint" class="muted small">
                {existing
                  ? 'The password of your Spool account. Your display name stays as it is.'
                  : 'At least 10 characters.'}
              </p>
              <ErrorText error={action.error} />
              <button type="submit" disabled={action.busy}>
                Accept invitation
              </button>
            </Form>
          </>
        ) : null}
      </div>
    </main>
  );
}
