import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { ApiError, session } from './api/client';
import type { components } from './api/schema';
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
  TOKEN,
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
}

const Ctx = createContext<Workspace | null>(null);

export const useWorkspace = () => useContext(Ctx)!;

/** The ID token (kept for the browser tab: sessionStorage), the user, and the org/app/environment shown. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const qc = useQueryClient();
  const [token, setToken] = useState(savedToken);
  const [pick, setPick] = useState(savedPick);
  const [environment, setEnvironment] = useState(DEFAULT_ENVIRONMENT);
  session.token = token;

  const signOut = useCallback(() => {
    sessionStorage.removeItem(TOKEN);
    session.token = null;
    setToken(null);
    qc.clear();
  }, [qc]);
  session.onUnauthorized = signOut;

  const signIn = useCallback((t: string, expiresInS: number) => {
    sessionStorage.setItem(TOKEN, t);
    sessionStorage.setItem(`${TOKEN}.exp`, String(Date.now() + expiresInS * 1000));
    setToken(t);
  }, []);

  // No refresh endpoint: at expiry the console goes back to sign-in rather than failing call by call.
  useEffect(() => {
    if (!token) return;
    const left = Number(sessionStorage.getItem(`${TOKEN}.exp`) ?? Infinity) - Date.now();
    if (!Number.isFinite(left)) return;
    const t = setTimeout(signOut, Math.max(0, Math.min(left, 2 ** 31 - 1)));
    return () => clearTimeout(t);
  }, [token, signOut]);

  const me = useQuery(meQuery(token));
  // A 401 of /me may come before the first render set onUnauthorized (first-load.ts asks early).
  const meUnauthorized = me.error instanceof ApiError && me.error.status === 401;
  useEffect(() => {
    if (meUnauthorized) signOut();
  }, [meUnauthorized, signOut]);

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
    }),
    [me.data, me.error, org, app, environment, select, signIn, signOut, token],
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
