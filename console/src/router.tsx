import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';
import { BASE, current } from './location';

/** A tiny history router: paths under the Vite base (/console/), no package needed. */

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((l) => l()));

export function navigate(to: string, { replace = false } = {}) {
  if (to === current()) return;
  window.history[replace ? 'replaceState' : 'pushState'](null, '', BASE + to);
  listeners.forEach((l) => l());
}

export function usePath(): string {
  return useSyncExternalStore((l) => {
    listeners.add(l);
    return () => listeners.delete(l);
  }, current);
}

/** A link that changes the page without reloading; aria-current marks the page shown. */
export function Link({ to, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const path = usePath();
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={BASE + to} aria-current={path === to ? 'page' : undefined} onClick={onClick} {...rest} />;
}
