import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

/** A tiny history router: paths under the Vite base (/console/), no package needed. */
const BASE = import.meta.env.BASE_URL.replace(/\/$/, '');

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((l) => l()));

/** The path inside the console, e.g. "/dashboard". */
export const current = () => {
  const p = window.location.pathname.startsWith(BASE)
    ? window.location.pathname.slice(BASE.length)
    : window.location.pathname;
  return p === '' ? '/' : p;
};

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
