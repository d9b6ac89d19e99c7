import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError } from '../../http/errors.js';

/** console/dist beside src/ and dist/ (this file sits three levels below the repository root in both). */
export const CONSOLE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../console/dist');

/** Vite names every file under assets/ after its content hash: it never changes, so a year of cache. */
const ASSET_MAX_AGE_MS = 365 * 86_400_000;

/**
 * The web console (console/, built by Vite with base /console/): files as they are, and index.html
 * for every other path under /console so the console's own router handles deep links and reloads.
 */
export const consoleRoutes =
  ({ root = CONSOLE_DIST }: { root?: string } = {}): FastifyPluginAsync =>
  async (app) => {
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
