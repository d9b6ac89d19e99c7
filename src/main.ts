// First, before the app's modules load: pins the object shapes every request uses (see the file).
import './lib/hot-shapes.js';
import pino from 'pino';
import { ConfigError, loadConfig } from './config.js';
import { takeOverShutdownSignals } from './db/embedded.js';
import { startServer } from './server.js';

// A configuration error is reported before the configured log level is known.
let logger = pino();

try {
  const config = loadConfig();
  logger = pino({ level: config.logLevel });
  const server = await startServer(config, logger);
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    server.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  takeOverShutdownSignals();
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  // A ConfigError is one sentence naming the setting and the fix: no stack trace around it.
  if (err instanceof ConfigError) logger.fatal(`start-up failed: ${err.message}`);
  else logger.fatal({ err }, 'start-up failed');
  process.exit(1);
}
