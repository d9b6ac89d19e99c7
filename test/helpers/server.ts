import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino, { type Logger } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { ONE_CLIENT_ADDRESS, testEncryptionKey } from './test-env.js';
import { serverStarted, serverStopped } from './linger.js';

const BASE_URL = process.env.TEST_PG_URL ?? 'postgres://postgres:postgres@127.0.0.1:55432/postgres';

/** A fresh database on the shared test server, so test files never see each other's data. */
export async function createTestDatabase(): Promise<string> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: BASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return BASE_URL.replace(/\/[^/]*$/, `/${name}`);
}

export interface TestServer extends RunningServer {
  url: string;
  db: pg.Pool;
  config: Config;
}

export async function startTestServer(
  env: Record<string, string> = {},
  databaseUrl?: string,
  logger: Logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' }),
): Promise<TestServer> {
  const dbUrl = databaseUrl ?? (await createTestDatabase());
  const config = loadConfig(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      ALLOW_PRIVATE_TARGETS: '1',
      SUPER_ADMIN_EMAILS: 'root@example.com',
      ...ONE_CLIENT_ADDRESS,
      ...env,
      DATABASE_URL: dbUrl,
    },
    // Instances on one database share its ENCRYPTION_KEY, as in production: each reads the secrets the other sealed.
    {
      dataDir: `/tmp/svc-test-${randomBytes(4).toString('hex')}`,
      encryptionKey: testEncryptionKey(dbUrl),
    },
  );
  const server = await startServer(config, logger);
  serverStarted();
  const db = new pg.Pool({ connectionString: dbUrl, max: 4 });
  return {
    ...server,
    url: server.url!,
    db,
    config,
    stop: async () => {
      await db.end();
      await server.stop();
      serverStopped();
    },
  };
}
