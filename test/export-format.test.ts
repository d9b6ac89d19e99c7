import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { CHUNK_BYTES, encodeFile } from '../src/modules/export/chunks.js';
import { CSV_COLUMNS } from '../src/modules/export/format.js';

// The download/bulk encoder works on bytes and splices received_at into the stored text without
// parsing; these check it against a plain reference (parse, set, stringify) on awkward input.

const SCREENS = ['home', 'café, "menu"\nline', '中文 screen', 'emoji 😀', 'cr\ronly', null];

function envelope(i: number): Record<string, unknown> {
  const e: Record<string, any> = {
    schema_version: 1,
    event_id: randomUUID(),
    event_name: i % 3 ? 'screen_view' : 'paywall,view',
    ts_ms: 1_763_700_000_000 + i,
    user: { anon_id: randomUUID(), ...(i % 4 === 0 ? { user_id: `u"${i}é` } : {}) },
    device: {
      platform: 'ios',
      os: '17.4',
      app_version: '1.2.3',
      sdk_version: '2.0.0',
      locale: 'fr_FR',
      country: 'FR',
      ...(i % 5 === 0 ? { framework: 'flutter', framework_version: null } : {}),
    },
    context: {
      session_id: randomUUID(),
      screen: SCREENS[i % SCREENS.length],
      client_seq: i,
      ...(i % 6 === 0 ? { experiment_exposures: [{ exp: 'e"1', variant: 'v,1' }] } : {}),
    },
    properties: {
      step: i % 7,
      label: `l${i % 3}`,
      flag: i % 2 === 0,
      nested: { a: [1, 'b', null] },
      ...(i % 97 === 0 ? { big: 'é'.repeat(12_000) } : {}),
    },
    privacy: { consent: { analytics: true } },
  };
  if (i === 11) e.received_at = 'client-sent'; // an unknown top-level key that export must overwrite in place
  if (i === 12) e.properties.received_at = 'a property'; // the same name deeper down stays as is
  if (i === 13) e.extra_top_level = { kept: true };
  return e;
}

const rows: [string, string][] = Array.from({ length: 3000 }, (_, i) => [
  JSON.stringify(envelope(i)),
  new Date(1_763_700_000_000 + Math.floor(i / 7) * 1000).toISOString(),
]);
rows.push(['{}', '2026-01-01T00:00:00.000Z']);

async function* batches(list: [string, string][]) {
  // Uneven batch sizes, as FETCH returns them at the end of a range.
  for (let i = 0, n = 1; i < list.length; i += n, n = ((n * 7 + 3) % 450) + 1) yield list.slice(i, i + n);
}

async function encode(list: [string, string][], format: 'json' | 'csv') {
  const chunks: Buffer[] = [];
  let counted = 0;
  for await (const chunk of encodeFile(batches(list), format, (n) => (counted += n))) chunks.push(chunk);
  assert.equal(counted, list.length);
  assert.ok(chunks.every((c) => c.length > 0 && c.length <= CHUNK_BYTES));
  return { text: Buffer.concat(chunks).toString('utf8'), chunks: chunks.length };
}

const exported = ([p, r]: [string, string]) => {
  const o = JSON.parse(p);
  o.received_at = r;
  return o;
};

function cells(o: Record<string, any>): string[] {
  return CSV_COLUMNS.map((col) => {
    const v = col.split('.').reduce((x: any, k) => x?.[k], o);
    if (col === 'properties' || col === 'context.experiment_exposures') return v === undefined ? '' : JSON.stringify(v);
    if (v === undefined || v === null) return '';
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  });
}

describe('export file encoding', () => {
  it('writes the JSON array byte for byte as parse-and-stringify would, across many chunks', async () => {
    const { text, chunks } = await encode(rows, 'json');
    assert.ok(chunks > 3, `only ${chunks} chunks`);
    assert.equal(text, `[\n${rows.map((r) => JSON.stringify(exported(r))).join(',\n')}\n]\n`);
    const file = JSON.parse(text);
    assert.equal(file[11].received_at, rows[11][1]);
    assert.equal(
      Object.keys(file[11]).indexOf('received_at'),
      Object.keys(JSON.parse(rows[11][0])).indexOf('received_at'),
    );
    assert.equal(file[12].properties.received_at, 'a property');
    assert.deepEqual(file[13].extra_top_level, { kept: true });
    assert.deepEqual(file.at(-1), { received_at: '2026-01-01T00:00:00.000Z' });
  });

  it('writes CSV exactly as csv-stringify would, and it parses back', async () => {
    const { text } = await encode(rows, 'csv');
    const expected = rows.map((r) => cells(exported(r)));
    assert.equal(text, stringify([[...CSV_COLUMNS], ...expected]));
    const back: string[][] = parse(text);
    assert.deepEqual(back.slice(1), expected);
  });

  it('keeps stored text that is not compact valid and splices after trailing blanks', async () => {
    const { text } = await encode(
      [
        ['{"a" : 1 }\n', 'R'],
        ['  {"b":[1,2]}  ', 'S'],
      ],
      'json',
    );
    assert.deepEqual(JSON.parse(text), [
      { a: 1, received_at: 'R' },
      { b: [1, 2], received_at: 'S' },
    ]);
  });

  it('writes an empty array or a bare header for an empty range', async () => {
    assert.equal((await encode([], 'json')).text, '[]\n');
    assert.equal((await encode([], 'csv')).text, stringify([[...CSV_COLUMNS]]));
  });
});
