import type { ComponentType } from 'react';
import type { Scope, StartQuery } from '../scope';
import { prefetchDashboard, prefetchFunnels, prefetchRetention } from './analytics-queries';

/**
 * Every page of the console: its path (under /console), its navigation label (also the link's
 * accessible name) and its component, loaded on first visit so the first load stays small.
 * Part 2 adds its pages here (see console/README.md "Adding a page").
 */
export interface PageDef {
  path: string;
  label: string;
  /** Loads the page's code, once (first-load.ts starts it for the first page, beside /me). */
  load(): Promise<ComponentType>;
  /** The page's component once its code is loaded. */
  loaded(): ComponentType | undefined;
  /** Starts the page's first queries on a first load, beside /me (first-load.ts), under the page's keys. */
  prefetch?(start: StartQuery, scope: Scope): void;
}

function page(
  path: string,
  label: string,
  load: () => Promise<{ default: ComponentType }>,
  prefetch?: PageDef['prefetch'],
): PageDef {
  let component: ComponentType | undefined;
  let loading: Promise<ComponentType> | undefined;
  return {
    path,
    label,
    prefetch,
    loaded: () => component,
    load: () =>
      (loading ??= load().then(
        (m) => (component = m.default),
        (e: unknown) => {
          loading = undefined; // a failed chunk load may pass on the next visit
          throw e;
        },
      )),
  };
}

export const PAGES: PageDef[] = [
  page('/', 'Dashboard', () => import('./dashboard'), prefetchDashboard),
  page('/funnels', 'Funnels', () => import('./funnels'), prefetchFunnels),
  page('/retention', 'Retention', () => import('./retention'), prefetchRetention),
  page('/activity', 'Activity', () => import('./activity')),
  page('/api-keys', 'API keys', () => import('./api-keys')),
  page('/members', 'Members', () => import('./members')),
  page('/settings', 'Settings', () => import('./settings')),
  page('/content', 'Content', () => import('./content')),
  page('/releases', 'Releases', () => import('./releases')),
  page('/experiments', 'Experiments', () => import('./experiments')),
  page('/option-sets', 'Option sets', () => import('./option-sets')),
  page('/webhooks', 'Webhooks', () => import('./webhooks')),
  page('/exports', 'Exports', () => import('./exports')),
  page('/ad-network', 'Ad network', () => import('./ad-network')),
  page('/privacy', 'Privacy', () => import('./privacy')),
];
