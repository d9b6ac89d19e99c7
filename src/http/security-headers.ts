import type { FastifyHelmetOptions } from '@fastify/helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Security headers. The HTML pages (the console under /console, the API reference under /docs)
 * get theirs from @fastify/helmet, registered in their own plugin scope with a Content-Security-Policy
 * each. Every other answer (the JSON API, /livez, 404s) gets a few constant headers set in the app's
 * one onRequest hook: helmet's hook (an async hook that builds its middleware on each request) is
 * kept off the hot SDK routes.
 */

/** Paths served with their own helmet policy: the app's hook sets nothing of its own there. */
const PAGES = /^\/(?:console|docs)(?:[/?]|$)/;

/** True for a page's URL (the console, the docs), which helmet covers; false for the API and the rest. */
export const isPage = (url: string) => PAGES.test(url);

const ONE_YEAR_S = 365 * 86_400;
const NOSNIFF = 'nosniff';
/** The console and the docs link nowhere that needs to know where the reader came from. */
const REFERRER = 'no-referrer';
const HSTS = `max-age=${ONE_YEAR_S}; includeSubDomains`;

/** True when browsers reach the service over TLS (PUBLIC_URL https): only then is HSTS sent. */
export const servesHttps = (publicUrl?: string) => publicUrl?.startsWith('https://') === true;

/**
 * The constant headers of an answer that is not a page: JSON must never be sniffed as HTML,
 * rendered as a document with scripts, or framed.
 */
export function apiHeaders(https: boolean): Record<string, string> {
  return {
    'x-content-type-options': NOSNIFF,
    'referrer-policy': REFERRER,
    'x-frame-options': 'DENY',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    ...(https ? { 'strict-transport-security': HSTS } : {}),
  };
}

type Directive = string | ((req: IncomingMessage, res: ServerResponse) => string);

/**
 * Helmet's options for a page: a strict CSP (nothing inline but what `scriptSrc` adds, e.g. a hash, no
 * plugins, no <base> elsewhere, never framed), nosniff, no referrer, and HSTS only over https.
 * helmet's own defaults are off (`useDefaults: false`): its upgrade-insecure-requests would break
 * a service reached over plain http (localhost, a private network).
 */
export function pageHelmet({
  https,
  scriptSrc = [],
  styleSrc = [],
}: {
  https: boolean;
  /** Added to script-src beside 'self' (e.g. the hash of an inline script, per request). */
  scriptSrc?: Directive[];
  /** Added to style-src beside 'self'. */
  styleSrc?: Directive[];
}): FastifyHelmetOptions {
  return {
    global: true,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'", ...scriptSrc],
        scriptSrcAttr: ["'none'"],
        styleSrc: ["'self'", ...styleSrc],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'"],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: REFERRER },
    strictTransportSecurity: https ? { maxAge: ONE_YEAR_S, includeSubDomains: true } : false,
    crossOriginEmbedderPolicy: false,
  };
}
