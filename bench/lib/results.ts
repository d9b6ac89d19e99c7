import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const FILE = path.resolve(import.meta.dirname, '..', 'RESULTS.md');

/** Replaces (or appends) the `## <title>` section of bench/RESULTS.md, leaving other sections alone. */
export function writeResultsSection(title: string, body: string): void {
  const header = '# Benchmark results\n\nEach section is rewritten by its own `npm run bench:*` command.\n';
  let text = existsSync(FILE) ? readFileSync(FILE, 'utf8') : header;
  const section = `## ${title}\n\n${body.trim()}\n\n`;
  const start = text.indexOf(`## ${title}\n`);
  if (start === -1) text = `${text.trimEnd()}\n\n${section}`;
  else {
    const next = text.indexOf('\n## ', start + 1);
    text = text.slice(0, start) + section + (next === -1 ? '' : text.slice(next + 1));
  }
  writeFileSync(FILE, `${text.trimEnd()}\n`);
}

export const machine = () =>
  `${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}, ${new Date().toISOString().slice(0, 16)}Z`;
