import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { ApiError, session } from './api/client';
import type { components } from './api/schema';
import { forgetToken, logout, onToken, renew, renewDueInMs, saveToken, subjectOf } from './auth';
import {
  DEFAULT_ENVIRONMENT,
  type Environment,
  type Me,
  meQuery,
  PICK,
  type Scope,
  savedPick,
  savedToken,
  scopeKey,
} from './scope';

export type { Environment, Scope } from './scope';
export type Org = Me['organizations'][number];
export type Role = Org['role'];

interface Workspace {
  me: Me | undefined;
  /** Why /me failed (the console cannot go on without it). */
  meError: unknown;
  org: Org | undefined;
  app: { id: string; name: string } | undefined;
  role: Role | undefined;
  environment: Environment;
  setEnvironment(e: Environment): void;
  select(orgId: string, appId?: string): void;
  signIn(token: string, expiresInS: number): void;
  signOut(): void;
  signedIn: boolean;
  /**
   * The sign-in ended under the user (a renewal refused: revoked, or past its end): the page stays
   * as it is, drafts included, under a sign-in dialog; signing in again as the same user resumes it.
   */
  expired: boolean;
  /** The signed-in user (the token's subject): pages are keyed by it, so another user starts afresh. */
  userId: string | undefined;
}

const Ctx = createContext<Workspace | null>(null);

export const useWorkspace = () => useContext(Ctx)!;

/** The ID token (kept for the browser tab: sessionStorage), the user, and the org/app/environment shown. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const qc = useQueryClient();
  const [token, setToken] = useState(savedToken);
  const [expired, setExpired] = useState(false);
  const [pick, setPick] = useState(savedPick);
  const [environment, setEnvironment] = useState(DEFAULT_ENVIRONMENT);
  session.token = token;
  const userId = subjectOf(token);

  // A renewal (timer, or a 401 retried) swaps the token in place: same user, same query keys, no remount.
  useEffect(() => onToken(setToken), []);

  const signOut = useCallback(() => {
    logout();
    setExpired(false);
    qc.clear();
  }, [qc]);
  const end = useCallback(() => setExpired(true), []);
  session.onUnauthorized = end;

  const signIn = useCallback(
    (t: string, expiresInS: number) => {
      const again = expired && subjectOf(t) === userId;
      if (!again) qc.clear();
      saveToken(t, expiresInS);
      setExpired(false);
      // Back from the dialog: what failed meanwhile is asked again; pages and their drafts stay.
      if (again) void qc.invalidateQueries();
    },
    [expired, userId, qc],
  );

  // Renewed at RENEW_AT of the token's lifetime; a refused renewal ends the sign-in (the dialog).
  useEffect(() => {
    if (!token || expired) return;
    const due = renewDueInMs();
    if (due === undefined) return;
    const t = setTimeout(() => void renew().then((ok) => ok || end()), Math.max(0, Math.min(due, 2 ** 31 - 1)));
    return () => clearTimeout(t);
  }, [token, expired, end]);

  const me = useQuery(meQuery(token));
  // A 401 of /me may come before the first render set onUnauthorized (first-load.ts asks early).
  const meUnauthorized = me.error instanceof ApiError && me.error.status === 401;
  const hasMe = me.data !== undefined;
  useEffect(() => {
    // Only a first /me (a stale token, no renewal): a refetch failing under the dialog keeps the page.
    if (meUnauthorized && !hasMe) forgetToken();
  }, [meUnauthorized, hasMe]);

  const orgs = me.data?.organizations ?? [];
  const org = orgs.find((o) => o.id === pick.orgId) ?? orgs[0];
  const app = org?.apps.find((a) => a.id === pick.appId) ?? org?.apps[0];
  session.tenantId = org?.id ?? null;
  session.appId = app?.id ?? null;

  const select = useCallback((orgId: string, appId?: string) => {
    const next = { orgId, appId };
    localStorage.setItem(PICK, JSON.stringify(next));
    setPick(next);
  }, []);

  const value = useMemo<Workspace>(
    () => ({
      me: me.data,
      meError: me.error,
      org,
      app,
      role: org?.role,
      environment,
      setEnvironment,
      select,
      signIn,
      signOut,
      signedIn: !!token,
      expired,
      userId,
    }),
    [me.data, me.error, org, app, environment, select, signIn, signOut, token, expired, userId],
  );
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

/** Query keys of app-scoped data carry the org, app and environment, so a switch refetches. */
export function useScopeKey(...parts: unknown[]) {
  const { org, app, environment } = useWorkspace();
  return scopeKey({ orgId: org?.id, appId: app?.id, environment }, ...parts);
}

/** The scope of a page (pages render only once an org and an app are chosen). */
export function useScope(): Scope {
  const { org, app, environment } = useWorkspace();
  return { orgId: org!.id, appId: app!.id, environment };
}

export type Schemas = components['schemas'];
