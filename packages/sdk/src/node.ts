/// <reference types="node" />
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Storage } from './storage.js';

/**
 * Node: one file per key in `dir`. A write goes to a temporary file that is then renamed over
 * the old one, so a process killed mid-write leaves the previous value, never half of one.
 */
export function fileStorage(dir: string): Storage {
  let ready: Promise<unknown> | null = null;
  let n = 0;
  const file = (k: string) => path.join(dir, encodeURIComponent(k));
  return {
    async getItem(k) {
      try {
        return await readFile(file(k), 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw e;
      }
    },
    async setItem(k, v) {
      await (ready ??= mkdir(dir, { recursive: true }));
      const tmp = `${file(k)}.${process.pid}.${n++}.tmp`;
      await writeFile(tmp, v);
      await rename(tmp, file(k));
    },
    async removeItem(k) {
      await unlink(file(k)).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      });
    },
  };
}
