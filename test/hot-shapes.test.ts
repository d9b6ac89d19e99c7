// src/lib/hot-shapes.ts: once V8's table of shapes grown from `{}` is full, objects of a first key it has
// no entry for get a map of their own each time (what slowed the version check, docs/bundles.md); the
// pinned shapes keep theirs. Each case runs in a fresh process with V8's natives syntax.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';

const CHILD = path.join(import.meta.dirname, 'helpers', 'shape-table-child.ts');

function run(mode: 'pinned' | 'unpinned') {
  const out = execFileSync(
    process.execPath,
    ['--allow-natives-syntax', '--expose-gc', '--import', 'tsx', CHILD, mode],
    { encoding: 'utf8' },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as { full: boolean; host: boolean; xApiKey: boolean; tick: boolean };
}

describe('hot object shapes', () => {
  it('without the pins, a full shape table gives headers objects and tick entries a map each', () => {
    // The failure the pins exist for, reproduced: if V8 stops behaving this way, they can go.
    assert.deepEqual(run('unpinned'), { full: true, host: false, xApiKey: false, tick: false });
  });

  it('with the pins, those objects keep one shared map however full the table is', () => {
    assert.deepEqual(run('pinned'), { full: true, host: true, xApiKey: true, tick: true });
  });
});
