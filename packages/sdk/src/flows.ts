/** A published onboarding flow as the bundle carries it (`content.onboarding_flows[id]`). */
export interface FlowDefinition {
  id: string;
  name?: string;
  /** Free-form objects; a step's `id` (else its index as a string) is the `step_id` of its events. */
  steps: { id?: string; [k: string]: unknown }[];
  settings?: Record<string, unknown>;
}

/** A flow's persisted progress: kept in the client's state, so a restart resumes it. */
export interface FlowProgress {
  /** The step to show. */
  index: number;
  status: 'in_progress' | 'completed' | 'dismissed';
  /** The last step viewed (a repeated view of it is not tracked again). */
  viewed?: number;
  answers: Record<string, unknown>;
}

/** One page of an Option Set (`GET /api/v1/sdk/option-sets/{setId}`). */
export interface OptionPage {
  set_id: string;
  version: number;
  items: { id: string | null; value: string; label: string; sort_order: number; option_data: object | null }[];
  /** Null on the last page. */
  next_cursor: string | null;
}

export interface OptionQuery {
  /** Accent- and case-insensitive search. */
  q?: string;
  cursor?: string;
  limit?: number;
}

export interface FlowHost {
  track(name: string, properties: Record<string, unknown>): Promise<void>;
  optionSet(setId: string, query: OptionQuery): Promise<OptionPage>;
  progress(flowId: string): FlowProgress | undefined;
  save(flowId: string, p: FlowProgress): Promise<void>;
}

/**
 * The headless runtime of one onboarding flow: the app draws the steps, the runtime tracks the
 * events the onboarding analytics read and keeps the progress across restarts.
 */
export class FlowRun {
  constructor(
    readonly flowId: string,
    private def: FlowDefinition,
    private host: FlowHost,
  ) {}

  get totalSteps(): number {
    return this.def.steps.length;
  }

  /** 'not_started', 'in_progress' (after start(), also after a restart), 'completed' or 'dismissed'. */
  get status(): FlowProgress['status'] | 'not_started' {
    return this.progress?.status ?? 'not_started';
  }

  /** The step to show: where the user left off. */
  get index(): number {
    return this.progress?.index ?? 0;
  }

  /** The progress as kept (status, step, answers given with complete() by step id), undefined before start(). */
  get progress(): FlowProgress | undefined {
    return this.host.progress(this.flowId);
  }

  /**
   * Starts the flow (`onboarding_flow_started`) or, when it is in progress (also after a
   * restart), resumes it without an event. A completed or dismissed flow starts over. Resolves to the step to show.
   */
  async start(): Promise<number> {
    if (this.status === 'in_progress') return this.index;
    await this.save({ index: 0, status: 'in_progress', answers: {} }, 'onboarding_flow_started', {
      flow_id: this.flowId,
      total_steps: this.totalSteps,
    });
    return 0;
  }

  /** The app shows step `i`: `onboarding_step_viewed` (once per consecutive view of the same step). */
  async view(i: number): Promise<void> {
    const p = this.current(i);
    if (p.viewed === i) return;
    return this.save({ ...p, index: i, viewed: i }, 'onboarding_step_viewed', this.stepProps(i));
  }

  /** The Option Set step `i` names (`option_set_id`), or undefined. */
  optionSetOf(i: number): string | undefined {
    const id = this.def.steps[i]?.option_set_id;
    return typeof id === 'string' && id ? id : undefined;
  }

  /** A page of the Option Set a select step names, searched with `q`, paged with `cursor`. */
  options(i: number, query: OptionQuery = {}): Promise<OptionPage> {
    const setId = this.optionSetOf(i);
    if (!setId) return Promise.reject(new Error(`step ${i} names no option set`));
    return this.host.optionSet(setId, query);
  }

  /**
   * Step `i` is done: `onboarding_step_completed`; after the last step, `onboarding_flow_completed`
   * too. A select step's answer (a value or values of its Option Set) goes with the event as
   * `option_set_id` and `option_value`, which lock those values (decisions §3).
   */
  async complete(i: number, answer?: unknown): Promise<void> {
    const p = this.current(i);
    const answers = answer === undefined ? p.answers : { ...p.answers, [this.stepId(i)]: answer };
    const last = i === this.totalSteps - 1;
    const next: FlowProgress = { ...p, answers, index: last ? i : i + 1, status: last ? 'completed' : p.status };
    const setId = this.optionSetOf(i);
    const chosen = typeof answer === 'string' || (Array.isArray(answer) && answer.every((v) => typeof v === 'string'));
    const lock = setId && chosen ? { option_set_id: setId, option_value: answer } : {};
    await this.save(next, 'onboarding_step_completed', { ...this.stepProps(i), ...lock });
    if (last)
      await this.host.track('onboarding_flow_completed', { flow_id: this.flowId, total_steps: this.totalSteps });
  }

  /** Back one step (the previous step is viewed again). Resolves to the step to show. */
  async back(): Promise<number> {
    const p = this.current(this.index);
    const i = Math.max(0, p.index - 1);
    await this.save({ ...p, index: i, viewed: undefined }, '', {});
    await this.view(i);
    return i;
  }

  /** The user left the flow: `onboarding_flow_dismissed` at the current step. */
  async dismiss(): Promise<void> {
    const p = this.current(this.index);
    return this.save({ ...p, status: 'dismissed' }, 'onboarding_flow_dismissed', this.stepProps(p.index));
  }

  private current(i: number): FlowProgress {
    const p = this.progress;
    if (p?.status !== 'in_progress') throw new Error('flow not started');
    if (!(i >= 0 && i < this.totalSteps && i % 1 === 0)) throw new RangeError(`no step ${i}`);
    return p;
  }

  private stepId(i: number): string {
    const id = this.def.steps[i]?.id;
    return typeof id === 'string' && id ? id : String(i);
  }

  private stepProps(i: number) {
    return { flow_id: this.flowId, step_id: this.stepId(i), step_index: i, total_steps: this.totalSteps };
  }

  /** The event first (as it is tracked), then the progress. */
  private async save(p: FlowProgress, event: string, props: Record<string, unknown>): Promise<void> {
    const tracked = event ? this.host.track(event, props) : Promise.resolve();
    await Promise.all([tracked, this.host.save(this.flowId, p)]);
  }
}
