import { createHook } from 'node:async_hooks';

/**
 * A test file's process must exit on its own once its servers have stopped (scripts/test.mjs runs
 * without --test-force-exit). When it is still alive 20 s after its last server stopped (and none
 * started since), this prints what holds it, so a lingering file names its handle in the output.
 */
let live = 0;
let generation = 0;

// TEST_LINGER_STACKS=1: where each live timer was created, printed with the report (costly: a stack per timer).
const timers = new Map<number, string>();
if (process.env.TEST_LINGER_STACKS) {
  createHook({
    init: (id, type) => void (type === 'Timeout' && timers.set(id, new Error().stack ?? '')),
    destroy: (id) => void timers.delete(id),
  }).enable();
}

export function serverStarted(): void {
  live++;
  generation++;
}

export function serverStopped(): void {
  live--;
  if (live > 0) return;
  const seen = generation;
  setTimeout(() => {
    if (live > 0 || generation !== seen) return;
    const handles = (process as unknown as { _getActiveHandles(): object[] })._getActiveHandles().map((h) => {
      const s = h as { localPort?: number; remotePort?: number; address?: () => unknown };
      const addr = typeof s.address === 'function' ? JSON.stringify(s.address()) : '';
      return `${h.constructor.name} local=${s.localPort ?? ''} remote=${s.remotePort ?? ''} ${addr}`;
    });
    console.error(`still running 20 s after the last server stopped: ${process.getActiveResourcesInfo().join(', ')}`);
    console.error(handles.join('\n'));
    for (const stack of timers.values()) console.error(`timer created ${stack}`);
  }, 20_000).unref();
}
