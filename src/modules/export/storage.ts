import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * Where bulk export files live. Local disk today; an object store (S3, GCS) implements the same
 * four calls. Keys are relative paths made of [A-Za-z0-9._/-] only.
 */
export interface ExportStorage {
  /** Writes the whole source under key; the object appears only once complete (never half-written). */
  put(key: string, source: AsyncIterable<string | Buffer>, signal?: AbortSignal): Promise<{ sizeBytes: number }>;
  /** The object as a stream with its size, or null when it does not exist. */
  open(key: string): Promise<{ stream: Readable; sizeBytes: number } | null>;
  delete(key: string): Promise<void>;
  /** Removes debris of interrupted writes older than maxAgeMs. */
  sweep(maxAgeMs: number): Promise<number>;
}

const SAFE_KEY = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

export function createLocalStorage(root: string): ExportStorage {
  const resolve = (key: string) => {
    if (!SAFE_KEY.test(key) || key.split('/').includes('..')) throw new Error(`unsafe storage key ${key}`);
    return path.join(root, key);
  };

  return {
    async put(key, source, signal) {
      const final = resolve(key);
      await mkdir(path.dirname(final), { recursive: true });
      // Written beside the target, then renamed: a crash leaves only a .partial file for sweep().
      const tmp = `${final}.${randomBytes(4).toString('hex')}.partial`;
      try {
        await pipeline(Readable.from(source, { objectMode: false }), createWriteStream(tmp), { signal });
        const { size } = await stat(tmp);
        await rename(tmp, final);
        return { sizeBytes: size };
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    },

    async open(key) {
      const file = resolve(key);
      try {
        const { size } = await stat(file);
        return { stream: createReadStream(file, { highWaterMark: 256 * 1024 }), sizeBytes: size };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
    },

    async delete(key) {
      await rm(resolve(key), { force: true });
    },

    async sweep(maxAgeMs) {
      let removed = 0;
      const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        if (!e.isFile() || !e.name.endsWith('.partial')) continue;
        const file = path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name);
        const s = await stat(file).catch(() => null);
        if (s && Date.now() - s.mtimeMs > maxAgeMs) {
          await rm(file, { force: true });
          removed++;
        }
      }
      return removed;
    },
  };
}
