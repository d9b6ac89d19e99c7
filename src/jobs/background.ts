/**
 * Work a job starts beside itself rather than waiting for it (the funnel refresh after a fold):
 * the service's stop waits for it before the pool closes, and none starts once the set is closed.
 */
export function createBackgroundTasks(onError: (err: unknown) => void) {
  const running = new Set<Promise<void>>();
  let closed = false;
  return {
    /** Runs `task` unless the set is closed; its failure goes to `onError`. */
    start(task: () => Promise<unknown>): void {
      if (closed) return;
      const p: Promise<void> = task()
        .then(() => undefined, onError)
        .finally(() => running.delete(p));
      running.add(p);
    },
    /** No task starts from now on; resolves once every running one has ended. */
    async close(): Promise<void> {
      closed = true;
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
