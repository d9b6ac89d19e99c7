import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export type Role = 'all' | 'api' | 'worker';

export interface Config {
  port: number;
  host: string;
  role: Role;
  dataDir: string;
  /** External PostgreSQL; when absent an embedded server runs under dataDir. */
  databaseUrl?: string;
  embeddedPgPort: number;
  /** Connections per process; a few busy backends per core beat many contending ones. */
  dbPoolMax: number;
  logLevel: string;
  /** Issuer and audience of the ID tokens the built-in identity provider signs. */
  jwtIssuer: string;
  jwtAudience: string;
  tokenTtlSeconds: number;
  /** Absolute lifetime of a refresh-token family, i.e. of one console sign-in (REFRESH_TTL_S). */
  refreshTtlSeconds: number;
  /** Failed sign-ins and signups per account / client address (docs/auth.md). */
  signInThrottle: {
    accountFailures: number;
    addressFailures: number;
    signupsPerAddress: number;
    lockS: number;
    lockMaxS: number;
    windowS: number;
  };
  /** Optional external OpenID Connect issuer trusted besides the built-in one. */
  oidc?: { issuer: string; jwksUrl: string; audience: string };
  superAdminEmails: Set<string>;
  allowPrivateTargets: boolean;
  webhookRetryScheduleS: number[];
  /** How often the webhook delivery worker polls for outbox rows and due deliveries (WEBHOOK_POLL_MS). */
  webhookPollMs: number;
  rollupIntervalS: number;
  /** Pacing of the worker's funnel-answer refresh; a stored answer serves for up to twice this after its data changed. */
  funnelRefreshS: number;
  /** Device partitions the analytics fold runs in parallel (one thread and database connection each). */
  foldPartitions: number;
  /** Fold rounds of fewer seqs run as one transaction for all partitions; a run folds again when at least this many newer seqs remain, or any remain after a pass this big. */
  foldParallelMin: number;
  /** Most seqs one fold round takes on: bigger rounds cost less per event and more memory (about 100 bytes per event in the fold threads). */
  foldChunk: number;
  /** work_mem (MB) of a fold transaction; its hash tables may use 4 times that. */
  foldWorkMemMb: number;
  /** temp_buffers (MB) of the fold threads' database sessions: room for a round's temp tables (its devices' new state). */
  foldTempBuffersMb: number;
  exportTtlHours: number;
  /** Group commit of ingested events (src/modules/ingest/group-commit.ts, docs/ingestion.md). */
  ingestGroupCommit: { waitMs: number; maxEvents: number; writers: number; queueMaxBytes: number; queueMaxMs: number };
  /** Config change stream (SSE): heartbeat, reconnect advice, caps, retention (docs/config-stream.md). */
  configStream: {
    /** Heartbeat comment interval: below the 30-60 s idle timeouts of common load balancers. */
    heartbeatMs: number;
    /** Reconnect advice: base + a uniform random share of the jitter, per client. */
    retryMs: number;
    retryJitterMs: number;
    /** Streams one instance holds at most, and at most per API key. */
    maxPerInstance: number;
    maxPerKey: number;
    /** Table poll interval while the LISTEN connection is down. */
    pollMs: number;
    retentionHours: number;
  };
  adNetwork: {
    authUrl: string;
    apiUrl: string;
    clientId: string;
    clientSecret: string;
    redirectUri: string;
  };
  encryptionKey: Buffer;
  /** ENCRYPTION_KEY_PREVIOUS: during a key rotation, opens what the old key sealed (docs/operations.md). */
  encryptionKeyPrevious?: Buffer;
  /** How long an API key look-up may be served from memory (revocation delay bound). */
  keyCacheTtlMs: number;
  /** global: limits shared by every instance through PostgreSQL; local: counted per process (one instance only). */
  rateLimits: 'global' | 'local';
  /** External base URL of the service (PUBLIC_URL, no trailing slash): makes export callbacks' download_url absolute. */
  publicUrl?: string;
  /** Browser origins (scheme://host[:port]) allowed to call the API cross-origin (CORS_ORIGINS); none by default. */
  corsOrigins: string[];
  /** When set, GET /metrics requires `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /** METRICS=off drops /metrics and its per-request instrumentation (the bench's baseline). */
  metricsEnabled: boolean;
  /** ROLE=worker serves /livez, /readyz and /metrics on this port when set (OPS_PORT). */
  opsPort?: number;
  /** Whether this process serves HTTP / runs workers, derived from role. */
  runsApi: boolean;
  runsWorkers: boolean;
  version: string;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return n;
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function origins(raw: string | undefined): string[] {
  const given = list(raw);
  for (const o of given) {
    let ok = false;
    try {
      ok = new URL(o).origin === o;
    } catch {}
    if (!ok)
      throw new ConfigError(
        `CORS_ORIGINS must list origins such as https://console.example.com (no path, no trailing slash), got "${o}"`,
      );
  }
  return given;
}

function parseKey(name: string, raw: string): Buffer {
  const key = Buffer.from(raw, raw.length === 64 ? 'hex' : 'base64');
  if (key.length !== 32) throw new ConfigError(`${name} must be 32 bytes (64 hex chars or base64)`);
  return key;
}

function loadEncryptionKey(env: Env, dataDir: string): Buffer {
  if (env.ENCRYPTION_KEY) return parseKey('ENCRYPTION_KEY', env.ENCRYPTION_KEY);
  // Generated once and kept beside the data so restarts can still decrypt stored secrets.
  const file = path.join(dataDir, 'encryption.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  const key = randomBytes(32);
  try {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, key.toString('hex'), { mode: 0o600 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ConfigError(
      `DATA_DIR ${dataDir} is not writable (${code}): set DATA_DIR to a writable directory, or ENCRYPTION_KEY`,
    );
  }
  return key;
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const role = (env.ROLE ?? 'all') as Role;
  if (!['all', 'api', 'worker'].includes(role)) throw new ConfigError(`ROLE must be all, api or worker, got "${role}"`);
  const dataDir = path.resolve(overrides.dataDir ?? env.DATA_DIR ?? './data');
  const schedule = list(env.WEBHOOK_RETRY_SCHEDULE ?? '5,300,1800,7200,18000,36000,36000').map(Number);
  if (schedule.length === 0 || schedule.some((s) => !Number.isFinite(s) || s < 0 || s > 7 * 86400)) {
    throw new ConfigError('WEBHOOK_RETRY_SCHEDULE must be a comma list of seconds (0..604800)');
  }
  const rateLimits = env.RATE_LIMITS ?? 'global';
  if (rateLimits !== 'global' && rateLimits !== 'local')
    throw new ConfigError(`RATE_LIMITS must be global or local, got "${rateLimits}"`);
  const oidcIssuer = env.OIDC_ISSUER;
  if (oidcIssuer && !env.OIDC_JWKS_URL) throw new ConfigError('OIDC_JWKS_URL is required with OIDC_ISSUER');
  const port = int(env, 'PORT', 3000, 0, 65535);
  const config: Config = {
    port,
    host: env.HOST ?? '0.0.0.0',
    role,
    dataDir,
    databaseUrl: env.DATABASE_URL || undefined,
    embeddedPgPort: int(env, 'EMBEDDED_PG_PORT', 54329, 1024, 65535),
    dbPoolMax: int(env, 'DB_POOL_MAX', 10, 2, 500),
    logLevel: env.LOG_LEVEL ?? 'info',
    jwtIssuer: env.JWT_ISSUER ?? env.PUBLIC_URL ?? `http://localhost:${port}`,
    jwtAudience: env.JWT_AUDIENCE ?? 'mobile-sdk-backend-console',
    tokenTtlSeconds: int(env, 'TOKEN_TTL_S', 12 * 3600, 5, 30 * 86400),
    refreshTtlSeconds: int(env, 'REFRESH_TTL_S', 30 * 86400, 1, 365 * 86400),
    // The numbers and why (OWASP's authentication guidance): docs/auth.md.
    signInThrottle: {
      accountFailures: int(env, 'SIGN_IN_ACCOUNT_FAILURES', 5, 1, 100),
      addressFailures: int(env, 'SIGN_IN_ADDRESS_FAILURES', 30, 1, 10_000),
      signupsPerAddress: int(env, 'SIGNUP_ADDRESS_LIMIT', 20, 1, 10_000),
      lockS: int(env, 'SIGN_IN_LOCK_S', 30, 1, 3600),
      lockMaxS: int(env, 'SIGN_IN_LOCK_MAX_S', 900, 1, 86400),
      windowS: int(env, 'SIGN_IN_WINDOW_S', 3600, 1, 7 * 86400),
    },
    oidc: oidcIssuer
      ? { issuer: oidcIssuer, jwksUrl: env.OIDC_JWKS_URL!, audience: env.OIDC_AUDIENCE ?? 'mobile-sdk-backend-console' }
      : undefined,
    superAdminEmails: new Set(list(env.SUPER_ADMIN_EMAILS).map((e) => e.toLowerCase())),
    allowPrivateTargets: env.ALLOW_PRIVATE_TARGETS === '1',
    webhookRetryScheduleS: schedule,
    webhookPollMs: int(env, 'WEBHOOK_POLL_MS', 500, 10, 60_000),
    rollupIntervalS: int(env, 'ROLLUP_INTERVAL_S', 60, 1, 86400),
    funnelRefreshS: int(env, 'ANALYTICS_FUNNEL_REFRESH_S', 60, 1, 86400),
    foldPartitions: int(env, 'ANALYTICS_FOLD_PARTITIONS', 2, 1, 16),
    foldParallelMin: int(env, 'ANALYTICS_FOLD_PARALLEL_MIN', 50_000, 0, 10_000_000),
    foldChunk: int(env, 'ANALYTICS_FOLD_CHUNK', 5_000_000, 1, 20_000_000),
    foldWorkMemMb: int(env, 'ANALYTICS_FOLD_WORK_MEM_MB', 256, 16, 16_384),
    foldTempBuffersMb: int(env, 'ANALYTICS_FOLD_TEMP_BUFFERS_MB', 256, 8, 65_536),
    exportTtlHours: int(env, 'EXPORT_TTL_HOURS', 168, 1, 24 * 365),
    ingestGroupCommit: {
      waitMs: int(env, 'INGEST_GROUP_WAIT_MS', 2, 0, 1000),
      maxEvents: int(env, 'INGEST_GROUP_MAX_EVENTS', 10_000, 500, 100_000),
      writers: int(env, 'INGEST_WRITERS', 2, 1, 16),
      queueMaxBytes: int(env, 'INGEST_QUEUE_MAX_MB', 64, 1, 4096) * 1024 * 1024,
      queueMaxMs: int(env, 'INGEST_QUEUE_MAX_MS', 2000, 10, 60_000),
    },
    configStream: {
      // 25 s: under the 30-60 s idle timeouts of common load balancers and proxies.
      heartbeatMs: int(env, 'CONFIG_STREAM_HEARTBEAT_MS', 25_000, 50, 300_000),
      retryMs: int(env, 'CONFIG_STREAM_RETRY_MS', 1000, 0, 600_000),
      retryJitterMs: int(env, 'CONFIG_STREAM_RETRY_JITTER_MS', 9000, 0, 600_000),
      maxPerInstance: int(env, 'CONFIG_STREAM_MAX_PER_INSTANCE', 20_000, 0, 1_000_000),
      maxPerKey: int(env, 'CONFIG_STREAM_MAX_PER_KEY', 10_000, 0, 1_000_000),
      pollMs: int(env, 'CONFIG_STREAM_POLL_MS', 2000, 50, 60_000),
      retentionHours: int(env, 'CONFIG_STREAM_RETENTION_H', 24, 0, 24 * 90),
    },
    adNetwork: {
      authUrl: env.AD_NETWORK_AUTH_URL ?? 'https://accounts.snapchat.com/login/oauth2',
      apiUrl: env.AD_NETWORK_API_URL ?? 'https://adsapi.snapchat.com/v1',
      clientId: env.AD_NETWORK_CLIENT_ID ?? '',
      clientSecret: env.AD_NETWORK_CLIENT_SECRET ?? '',
      redirectUri: env.AD_NETWORK_REDIRECT_URI ?? '',
    },
    encryptionKey: Buffer.alloc(0),
    keyCacheTtlMs: int(env, 'KEY_CACHE_TTL_MS', 4000, 0, 5000),
    rateLimits,
    corsOrigins: origins(env.CORS_ORIGINS),
    publicUrl: env.PUBLIC_URL ? env.PUBLIC_URL.replace(/\/+$/, '') : undefined,
    metricsToken: env.METRICS_TOKEN || undefined,
    metricsEnabled: env.METRICS !== 'off',
    opsPort: env.OPS_PORT ? int(env, 'OPS_PORT', 0, 0, 65535) : undefined,
    runsApi: role !== 'worker',
    runsWorkers: role !== 'api',
    version: env.npm_package_version ?? '0.1.0',
    ...overrides,
  };
  if (!overrides.encryptionKey) config.encryptionKey = loadEncryptionKey(env, config.dataDir);
  if (env.ENCRYPTION_KEY_PREVIOUS && !overrides.encryptionKeyPrevious) {
    const previous = parseKey('ENCRYPTION_KEY_PREVIOUS', env.ENCRYPTION_KEY_PREVIOUS);
    // The same key twice is no rotation: nothing to re-seal.
    if (!previous.equals(config.encryptionKey)) config.encryptionKeyPrevious = previous;
  }
  return config;
}
