import Fastify, { LogController } from 'fastify';
import pino from 'pino';
import { randomUUID } from 'node:crypto';
const body = Buffer.from(JSON.stringify({ data: { bundle_version: 9, sdk_min_version: '1.0.0', generated_at: new Date().toISOString() } }));
const mode = process.env.MODE!;
const opts: any = { trustProxy: true, requestIdHeader: false };
if (mode !== 'nolog') Object.assign(opts, { loggerInstance: pino({ level: 'warn' }), logController: new LogController({ disableRequestLogging: true }) });
if (mode !== 'nouuid') opts.genReqId = () => randomUUID();
const app = Fastify(opts);
if (mode !== 'nohooks') {
  app.addHook('onRequest', async (req, reply) => { reply.header('x-request-id', req.id); });
  app.addHook('onResponse', async (req, reply) => { if (reply.statusCode >= 500) req.log.warn('x'); });
}
app.get('/v', { preHandler: async (req: any) => { req.apiKey = { a: 1 }; } }, async (req, reply) => reply.header('etag', '"x"').type('application/json; charset=utf-8').send(body));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
