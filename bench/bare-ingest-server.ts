// Baseline for the ingestion benchmark: the HTTP ceiling. Same framework, same body parsing,
// no validation and no database: answers 202 for any batch.
import Fastify from 'fastify';

const app = Fastify({ bodyLimit: 5 * 1024 * 1024 });
app.get('/ready', async () => ({ ok: true }));
app.post('/api/v1/ingest/events', async (req, reply) => {
  const n = (req.body as { batch: unknown[] }).batch.length;
  return reply.status(202).send({ accepted: n, rejected: 0, sampled: 0, consent_declined: 0 });
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
