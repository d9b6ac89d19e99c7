import { uuid } from './uuid.js';

/** The persisted session: `open` between its session_start and its session_end. */
export interface Session {
  id: string;
  start: number;
  last: number;
  open?: boolean;
}

export interface LifecycleDeps {
  /** Automatic lifecycle events (option `lifecycle`); off: the session id still rotates, silently. */
  on: boolean;
  timeoutMs: number;
  session(): Session;
  setSession(s: Session): void;
  /** Queues an automatic event at `ts`, stamped with the session current at the call. */
  emit(name: string, properties: Record<string, unknown>, ts: number): void;
}

/**
 * Sessions and the lifecycle events, by the spec's triggers: app_open + session_start at launch,
 * session_end on background (and after the idle timeout, stamped 1 ms after the last event),
 * session_start on foreground, session_end + app_close at termination.
 */
export class Lifecycle {
  foreground = true;

  constructor(private d: LifecycleDeps) {}

  /** Launch: ends a session a killed process left open, then app_open and a new session. */
  launch(now: number, firstOpen: boolean): void {
    if (!this.d.on) return;
    this.end(now, true);
    this.d.setSession({ id: uuid(), start: now, last: now, open: true });
    this.d.emit('app_open', { first_open: firstOpen }, now);
    this.d.emit('session_start', {}, now);
  }

  /** Before an app event at `now`: a session idle past the timeout ends and a new one starts. */
  touch(now: number): void {
    const s = this.d.session();
    if (now - s.last <= this.d.timeoutMs) return;
    if (!this.d.on) return this.d.setSession({ id: uuid(), start: now, last: now });
    if (!s.open || !this.foreground) return;
    this.end(now);
    this.begin(now);
  }

  /** True when the state changed (a repeated value does nothing). */
  setForeground(active: boolean, now: number): boolean {
    if (active === this.foreground) return false;
    this.foreground = active;
    if (!this.d.on) return true;
    if (active) this.begin(now);
    else this.end(now);
    return true;
  }

  /** Termination: session_end if a session is open, then app_close. */
  terminate(now: number): void {
    if (!this.d.on) return;
    this.end(now);
    this.d.emit('app_close', {}, now);
  }

  /** Log-out: the open session ends (under the old identity), `swap` changes it, a new session starts. */
  restart(now: number, swap: () => void): void {
    const open = this.d.session().open;
    this.end(now);
    swap();
    this.d.setSession({ id: uuid(), start: now, last: now });
    if (open && this.d.on) this.begin(now);
  }

  private begin(now: number): void {
    this.d.setSession({ id: uuid(), start: now, last: now, open: true });
    this.d.emit('session_start', {}, now);
  }

  /** Ends the open session at `now`, or 1 ms after its last event when it timed out (or its process died) before. */
  private end(now: number, died = false): void {
    const s = this.d.session();
    if (!s.open || !this.d.on) return;
    const at = died || now - s.last > this.d.timeoutMs ? s.last + 1 : now;
    this.d.emit('session_end', { duration_ms: at - (s.start ?? s.last) }, at);
    s.open = false;
  }
}
