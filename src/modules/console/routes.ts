import helmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError } from '../../http/errors.js';
import { pageHelmet } from '../../http/security-headers.js';

/** console/dist beside src/ and dist/ (this file sits three levels below the repository root in both). */
export const CONSOLE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../console/dist');

/** Vite names every file under assets/ after its content hash: it never changes, so a year of cache. */
const ASSET_MAX_AGE_MS = 365 * 86_400_000;

/** An inline <script> without src (Vite's page-preload lines in index.html): its body. */
const INLINE_SCRIPT = /<script>([\s\S]*?)<\/script>/g;

/**
 * The CSP sources of index.html's inline scripts ('sha256-…'), read from the built file and
 * recomputed when it changes (a rebuild), so the page's one inline script runs and nothing else inline.
 */
export function inlineScriptHashes(indexFile: string): () => string {
  let seen: { mtimeMs: number; sources: string } | undefined;
  return () => {
    if (!existsSync(indexFile)) return '';
    const { mtimeMs } = statSync(indexFile);
    if (seen?.mtimeMs !== mtimeMs) {
      const html = readFileSync(indexFile, 'utf8');
      const sources = [...html.matchAll(INLINE_SCRIPT)].map(
        ([, body]) => `'sha256-${createHash('sha256').update(body!).digest('base64')}'`,
      );
      seen = { mtimeMs, sources: sources.join(' ') };
    }
    return seen.sources;
  };
}

/**
 * The web console (console/, built by Vite with base /console/): files as they are, and index.html
 * for every other path under /console so the console's own router handles deep links and reloads.
 */
export const consoleRoutes =
  ({
    root = CONSOLE_DIST,
    https = false,
  }: {
    root?: string /** PUBLIC_URL is https: send HSTS. */;
    https?: boolean;
  } = {}): FastifyPluginAsync =>
  async (app) => {
    // Its own scope (this plugin is not fastify-plugin wrapped): helmet's policy covers the console only.
    await app.register(helmet, pageHelmet({ https, scriptSrc: [inlineScriptHashes(path.join(root, 'index.html'))] }));
    await app.register(fastifyStatic, { root, serve: false });

    const index = (reply: FastifyReply) => {
      if (!existsSync(path.join(root, 'index.html'))) {
        throw new AppError(
          'service_unavailable',
          'The console is not built: run `npm run build -w console` (npm start does it)',
        );
      }
      // Always revalidated: it names the current hashed assets.
      return reply.header('cache-control', 'no-cache').sendFile('index.html', { cacheControl: false });
    };

    app.get('/console', { schema: { hide: true } }, (_req, reply) => reply.redirect('/console/'));
    app.get('/console/*', { schema: { hide: true } }, (req, reply) => {
      const rel = (req.params as { '*': string })['*'];
      const file = path.join(root, rel);
      const isFile = rel !== '' && file.startsWith(root + path.sep) && existsSync(file) && statSync(file).isFile();
      if (!isFile) return index(reply);
      return rel.startsWith('assets/')
        ? reply.sendFile(rel, { maxAge: ASSET_MAX_AGE_MS, immutable: true })
        : reply.sendFile(rel, { maxAge: 0 });
    });
  };
