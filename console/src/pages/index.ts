import { lazy, type ComponentType, type LazyExoticComponent } from 'react';

/**
 * Every page of the console: its path (under /console), its navigation label (also the link's
 * accessible name) and its component, loaded on first visit so the first load stays small.
 * Part 2 adds its pages here (see console/README.md "Adding a page").
 */
export interface PageDef {
  path: string;
  label: string;
  component: LazyExoticComponent<ComponentType>;
  /** Starts loading the page's code (main.tsx does it for the first page, beside the /me call). */
  load(): Promise<unknown>;
}

const page = (path: string, label: string, load: () => Promise<{ default: ComponentType }>): PageDef => ({
  path,
  label,
  load,
  component: lazy(load),
});

export const PAGES: PageDef[] = [
  page('/', 'Dashboard', () => import('./dashboard')),
  page('/funnels', 'Funnels', () => import('./funnels')),
  page('/retention', 'Retention', () => import('./retention')),
  page('/activity', 'Activity', () => import('./activity')),
  page('/api-keys', 'API keys', () => import('./api-keys')),
  page('/members', 'Members', () => import('./members')),
  page('/settings', 'Settings', () => import('./settings')),
  page('/content', 'Content', () => import('./content')),
  page('/releases', 'Releases', () => import('./releases')),
  page('/option-sets', 'Option sets', () => import('./option-sets')),
  page('/webhooks', 'Webhooks', () => import('./webhooks')),
  page('/exports', 'Exports', () => import('./exports')),
  page('/ad-network', 'Ad network', () => import('./ad-network')),
];
