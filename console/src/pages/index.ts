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
}

export const PAGES: PageDef[] = [
  { path: '/', label: 'Dashboard', component: lazy(() => import('./dashboard')) },
  { path: '/funnels', label: 'Funnels', component: lazy(() => import('./funnels')) },
  { path: '/retention', label: 'Retention', component: lazy(() => import('./retention')) },
  { path: '/activity', label: 'Activity', component: lazy(() => import('./activity')) },
  { path: '/api-keys', label: 'API keys', component: lazy(() => import('./api-keys')) },
  { path: '/members', label: 'Members', component: lazy(() => import('./members')) },
  { path: '/settings', label: 'Settings', component: lazy(() => import('./settings')) },
];
