/** The console's base path (Vite's base, /console/) without its trailing slash. */
export const BASE = import.meta.env.BASE_URL.replace(/\/$/, '');

/** The path inside the console, e.g. "/dashboard". */
export const current = () => {
  const p = window.location.pathname.startsWith(BASE)
    ? window.location.pathname.slice(BASE.length)
    : window.location.pathname;
  return p === '' ? '/' : p;
};
