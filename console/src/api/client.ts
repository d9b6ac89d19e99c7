import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';

/** A problem+json answer of the API, thrown by `unwrap` so queries and mutations see one error type. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly errors: FieldError[] = [],
  ) {
    super(message);
  }
}

/** What the client adds to every call: the ID token and the org/app the console is looking at. */
export const session = {
  token: null as string | null,
  tenantId: null as string | null,
  appId: null as string | null,
  /** Called on a 401 of a signed-in call that a renewal did not save: the sign-in ended. */
  onUnauthorized: () => {},
  /** Renews the ID token (auth.ts); true when a new one is in `token`. */
  renew: (): Promise<boolean> => Promise.resolve(false),
};

/**
 * A signed-in call answered 401 (the token expired while the laptop slept, or the renewal timer
 * has not run yet) is renewed and retried once with the new token.
 */
async function withRenewal(request: Request, init?: RequestInit): Promise<Response> {
  const sent = request.headers.get('authorization');
  const retry = sent && !new URL(request.url).pathname.startsWith('/api/v1/auth/') ? request.clone() : undefined;
  const res = await fetch(request, init);
  if (res.status !== 401 || !retry) return res;
  // A renewal since this call left (the timer's, another call's) is used as it is.
  if (sent === `Bearer ${session.token}` && !(await session.renew())) return res;
  retry.headers.set('authorization', `Bearer ${session.token}`);
  return fetch(retry, init);
}

const headers: Middleware = {
  onRequest({ request }) {
    if (session.token) request.headers.set('authorization', `Bearer ${session.token}`);
    // A call that names its org and app (a prefetch made before /me answers) keeps them.
    if (session.tenantId && !request.headers.has('x-tenant-id')) request.headers.set('x-tenant-id', session.tenantId);
    if (session.appId && !request.headers.has('x-app-id')) request.headers.set('x-app-id', session.appId);
    return request;
  },
  onResponse({ request, response }) {
    if (response.status === 401 && request.headers.has('authorization')) session.onUnauthorized();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: '', fetch: withRenewal });
api.use(headers);

/** A problem's `errors[]`: the JSON pointer of the field at fault (e.g. `/body/name`) and why. */
export interface FieldError {
  path: string;
  message: string;
}

interface Problem {
  errors?: FieldError[];
  code?: string;
  detail?: string;
  title?: string;
}

/** The data of an answer, or an ApiError with the problem's detail. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const p = (error ?? {}) as Problem;
  throw new ApiError(response.status, p.code, p.detail ?? p.title ?? `HTTP ${response.status}`, p.errors);
}
