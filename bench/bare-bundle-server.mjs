// Baseline for the bundles benchmark: a bare Fastify app answering the same bytes as the service
// (read once from files the bench wrote), with no auth, no cache lookup and no database. Plain
// JavaScript, run by node itself as the compiled service is: under tsx's loader the same server
// used about a fifth more CPU per request and varied twice as much between processes.
// PIN_SHAPES=1: the service's shape pins (src/lib/hot-shapes.ts) first, as src/main.ts loads them.
import { readFileSync } from 'node:fs';

if (process.env.PIN_SHAPES) await import('../dist/lib/hot-shapes.js');
const { default: Fastify } = await import('fastify');

const bundle = readFileSync(process.env.BUNDLE_FILE);
// A string, as the service sends it (one write syscall for headers and body).
const version = readFileSync(process.env.VERSION_FILE, 'utf8');
const app = Fastify();
app.get('/api/v1/sdk/config-bundle', async (_req, reply) => reply.type('application/json; charset=utf-8').send(bundle));
app.get('/api/v1/sdk/config-bundle/version', async (_req, reply) =>
  reply.type('application/json; charset=utf-8').send(version),
);
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
