/** Signing in, and accepting an invitation (`/console/invitation#TOKEN`). */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { get, post, type Role, type Session } from '../api.js';
import { ErrorText, Time, useAction, useResource } from '../ui.js';

export function SignIn(props: { onSignedIn(s: Session): void; notice?: string }): JSX.Element {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction(async () => {
    const s = await post<Session>('/console/v1/sign-in', { email, password });
    props.onSignedIn(s);
  });
  return (
    <main class="auth">
      <div class="auth-card">
        <p class="brand">Spool</p>
        <h1>Sign in to the console</h1>
        {props.notice ? <p class="notice">{props.notice}</p> : null}
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void action.run();
          }}
        >
          <label>
            Email
            <input
              type="email"
              name="email"
              autocomplete="username"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          </label>
          <label>
            Password
            <input
              type="password"
              name="password"
              autocomplete="current-password"
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </label>
          <ErrorText error={action.error} />
          <button type="submit" disabled={action.busy}>
            Sign in
          </button>
        </form>
        <p class="muted small">
          New here? Ask your operator or an administrator of your organization for an invitation.
        </p>
      </div>
    </main>
  );
}

interface InvitationInfo {
  invitation: {
    id: string;
    email: string;
    role: Role;
    org: { id: string; name: string };
    expires_at: string;
  };
}

export function AcceptInvitation(props: { onSignedIn(s: Session): void }): JSX.Element {
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
  const [displayName, setDisplayName] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction(async () => {
    const s = await post<Session>(`/console/v1/invitations/${encodeURIComponent(token)}/accept`, {
      display_name: displayName,
      password,
    });
    props.onSignedIn(s);
  });
  const inv = info.data?.invitation;
  return (
    <main class="auth">
      <div class="auth-card">
        <p class="brand">Spool</p>
        <h1>Accept your invitation</h1>
        {info.loading && !inv ? <p class="muted">Checking the invitation…</p> : null}
        <ErrorText error={info.error} />
        {inv ? (
          <>
            <p>
              You are invited to <strong>{inv.org.name}</strong> as <strong>{inv.role}</strong>,
              with the email <strong>{inv.email}</strong>. The invitation is valid until{' '}
              <Time at={inv.expires_at} />.
            </p>
            <form
              onSubmit={(e) => {
                e.preventDefault();
                void action.run();
              }}
            >
              <label>
                Display name
                <input
                  name="display_name"
                  autocomplete="name"
                  required
                  maxLength={200}
                  value={displayName}
                  onInput={(e) => setDisplayName(e.currentTarget.value)}
                />
              </label>
              <label>
                Password
                <input
                  type="password"
                  name="password"
                  autocomplete="new-password"
                  required
                  minLength={10}
                  maxLength={200}
                  aria-describedby="password-hint"
                  value={password}
                  onInput={(e) => setPassword(e.currentTarget.value)}
                />
              </label>
              <p id="password-hint" class="muted small">
                At least 10 characters. If you already have a Spool account with this email, use its
                password.
              </p>
              <ErrorText error={action.error} />
              <button type="submit" disabled={action.busy}>
                Accept invitation
              </button>
            </form>
          </>
        ) : null}
      </div>
    </main>
  );
}
