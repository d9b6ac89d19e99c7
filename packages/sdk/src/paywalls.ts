import type { Purchase } from './auto-events.js';
import type { Client } from './client.js';

/** A published paywall as the bundle carries it (`content.paywalls[id]`). */
export interface PaywallDefinition {
  id: string;
  name?: string;
  layout?: Record<string, unknown>;
  plans?: unknown[];
  cta?: Record<string, unknown>;
  dismiss?: boolean;
  [k: string]: unknown;
}

/** The client calls a paywall needs (structural, so any build of the SDK's Client fits). */
export type PaywallClient = Pick<
  Client,
  'getBundle' | 'getExperiment' | 'getAnonId' | 'track' | 'purchaseStarted' | 'purchaseCompleted'
> &
  Pick<Client, 'purchaseFailed' | 'purchaseCanceled' | 'purchasePending' | 'purchaseRestored'>;

type PurchaseCall = 'purchaseStarted' | 'purchaseCompleted' | 'purchaseFailed' | 'purchaseCanceled';

/** Paywalls on screen, per client: `shown()` tracks once per display, `closed()` ends the display. */
const onScreen = new WeakMap<object, Set<string>>();

/**
 * One display of a paywall placement. The placement asks for a paywall id; a running (or shipped)
 * experiment whose control value is `{ paywall_id: <that id> }` replaces it with the paywall of the
 * variant this device is assigned (through `getExperiment`, which queues the exposure).
 */
export class PaywallRun {
  constructor(
    private client: PaywallClient,
    /** The paywall the placement asked for. */
    readonly requestedId: string,
    /** The paywall to show (the experiment's variant, else the requested one). */
    readonly paywallId: string,
    readonly content: PaywallDefinition,
    /** The experiment that chose `paywallId`, when one did. */
    readonly experiment: { key: string; variant: string; inExperiment: boolean } | null,
  ) {}

  /** The events' properties: the shown paywall, and the experiment that chose it. */
  get properties(): Record<string, unknown> {
    const e = this.experiment;
    return { paywall_id: this.paywallId, ...(e ? { experiment_id: e.key, variant: e.variant } : {}) };
  }

  /** True between `shown()` and `closed()`. */
  get displayed(): boolean {
    return !!onScreen.get(this.client)?.has(this.paywallId);
  }

  /** The paywall is on screen: `paywall_view`, once per display (a repeated call does nothing until `closed()`). */
  shown(): Promise<void> {
    let set = onScreen.get(this.client);
    if (!set) onScreen.set(this.client, (set = new Set()));
    if (set.has(this.paywallId)) return Promise.resolve();
    set.add(this.paywallId);
    return this.client.track('paywall_view', this.properties);
  }

  /** The paywall left the screen: `paywall_close` (nothing when it was not shown). */
  closed(): Promise<void> {
    if (!onScreen.get(this.client)?.delete(this.paywallId)) return Promise.resolve();
    return this.client.track('paywall_close', this.properties);
  }

  // The typed purchase events, carrying the paywall's properties (the checks are the client's).
  purchaseStarted = (p: Purchase) => this.buy('purchaseStarted', p);
  purchaseCompleted = (p: Purchase) => this.buy('purchaseCompleted', p);
  purchaseFailed = (p: Purchase) => this.buy('purchaseFailed', p);
  purchaseCanceled = (p: Purchase) => this.buy('purchaseCanceled', p);

  private buy(call: PurchaseCall, p: Purchase): Promise<void> {
    return this.client[call]({ ...p, ...this.properties });
  }
}

const paywallOf = (v: unknown): string | undefined => {
  const id = (v as { paywall_id?: unknown } | null)?.paywall_id;
  return typeof id === 'string' ? id : undefined;
};

/**
 * The paywall to show for a placement asking for `paywallId`, or null when the bundle has no such
 * paywall (or the client's storage is not read yet). A running or shipped experiment whose control
 * value names this paywall decides (the first by key when several do); a variant naming a paywall
 * the bundle lacks falls back to the requested one.
 */
export function paywall(client: PaywallClient, paywallId: string): PaywallRun | null {
  const content = client.getBundle()?.content;
  const paywalls = (content?.paywalls ?? {}) as Record<string, PaywallDefinition>;
  const requested = paywalls[paywallId];
  if (!requested || client.getAnonId() === undefined) return null;
  const exps = content?.experiments ?? {};
  const key = Object.keys(exps)
    .sort()
    .find((k) => {
      const e = exps[k];
      return (e.status === 'running' || e.status === 'shipped') && paywallOf(e.variants?.[0]?.value) === paywallId;
    });
  if (key === undefined) return new PaywallRun(client, paywallId, paywallId, requested, null);
  const r = client.getExperiment(key);
  const chosen = paywallOf(r.value);
  const shown = chosen && paywalls[chosen] ? chosen : paywallId;
  const experiment = { key, variant: r.variant ?? '', inExperiment: r.inExperiment };
  return new PaywallRun(client, paywallId, shown, paywalls[shown], experiment);
}
