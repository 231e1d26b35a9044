/** The signed-in session as every page sees it: who, in which organization, with which role. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { hasRole } from '../../lib/roles.js';
import type { OrgMembership, Role, Session } from './types.js';

export interface AppState {
  session: Session;
  org: OrgMembership;
  setOrg(id: string): void;
  signOut(): Promise<void>;
  /** Shows the organization's new name (the settings page renamed it). */
  renamedOrg(name: string): void;
}
export const AppContext = createContext<AppState | null>(null);

export function useApp(): AppState {
  const app = useContext(AppContext);
  if (!app) throw new Error('no session');
  return app;
}

/** Whether the signed-in person's role in the current organization is at least `role`. */
export function useCan(role: Role): boolean {
  const { org } = useApp();
  return hasRole(org.role, role);
}
