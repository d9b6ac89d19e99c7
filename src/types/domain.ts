/**
 * Domain types shared by every module (stores, services, jobs) and by the HTTP layer, which
 * imports them from here: no store depends on src/http.
 */

/** Every tenant-owned read or write is scoped by both ids. */
export interface Scope {
  tenantId: string;
  appId: string;
}

/** The environment of an API key and of the data sent with it. */
export type Environment = 'production' | 'sandbox';
