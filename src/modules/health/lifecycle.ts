/** The process's shutdown state, shared by readiness (draining answers 503) and the server's stop. */
export interface Lifecycle {
  draining: boolean;
}

export const createLifecycle = (): Lifecycle => ({ draining: false });
