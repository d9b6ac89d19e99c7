/**
 * Shares reads among concurrent callers of the same key, with one rule that keeps streams
 * gap-free: a caller only joins a read that starts after its call. While a read runs, new
 * callers wait for the next one, which all of them share. A reconnect storm after a deploy
 * (thousands of clients of one app with the same Last-Event-ID) then costs a few reads, not one each.
 */
export function createBatcher<T>() {
  const slots = new Map<string, { running: Promise<T> | null; queued: Promise<T> | null }>();

  function start(
    key: string,
    slot: { running: Promise<T> | null; queued: Promise<T> | null },
    read: () => Promise<T>,
  ): Promise<T> {
    const p: Promise<T> = read().finally(() => {
      if (slot.running === p) slot.running = null;
      if (!slot.running && !slot.queued) slots.delete(key);
    });
    slot.running = p;
    return p;
  }

  return (key: string, read: () => Promise<T>): Promise<T> => {
    let slot = slots.get(key);
    if (!slot) slots.set(key, (slot = { running: null, queued: null }));
    const s = slot;
    const running = s.running;
    if (!running) return start(key, s, read);
    return (s.queued ??= running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        s.queued = null;
        return start(key, s, read);
      }));
  };
}
