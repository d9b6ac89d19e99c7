import { api, unwrap } from './api/client';
import { subjectOf, TOKEN } from './auth';
import type { paths } from './api/schema';

/**
 * What the console keeps in the browser (the ID token for the tab, the org and app picked last)
 * and the scope of an app-scoped call. No React here: the entry (main.tsx) reads it before React
 * has loaded.
 */
export type Me = paths['/api/v1/me']['get']['responses'][200]['content']['application/json']['data'];
export type Environment = 'production' | 'sandbox';

export { TOKEN };
export const PICK = 'console.pick';
export const DEFAULT_ENVIRONMENT: Environment = 'production';

/** The org, app and environment an app-scoped call is about (its query key and its headers). */
export interface Scope {
  orgId: string;
  appId: string;
  environment: Environment;
}

export const savedToken = () => sessionStorage.getItem(TOKEN);
export const savedPick = (): { orgId?: string; appId?: string } => JSON.parse(localStorage.getItem(PICK) ?? '{}');

export const scopeKey = (s: Partial<Scope>, ...parts: unknown[]) => [s.orgId, s.appId, s.environment, ...parts];
export const scopeHeaders = (s: Scope) => ({ 'x-tenant-id': s.orgId, 'x-app-id': s.appId });

/** How long an answer counts as fresh when its query says nothing else (the app's QueryClient default). */
export const STALE_MS = 30_000;

/** A query as TanStack Query takes it (key and function), defined without importing it. */
export interface QueryDef<T> {
  queryKey: unknown[];
  queryFn(): Promise<T>;
}

/** Starts a query's call (first-load.ts: before React, under the query's key). */
export type StartQuery = <T>(q: QueryDef<T>) => Promise<T>;

/** Keyed by the user, not the token: a renewed token (same user) neither refetches nor remounts. */
export const meQuery = (token: string | null) => ({
  queryKey: ['me', subjectOf(token)],
  enabled: !!token,
  queryFn: () => unwrap(api.GET('/api/v1/me')).then((r): Me => r.data),
});
