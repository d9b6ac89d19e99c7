/** A plan as the demo's paywalls list it (`content.paywalls[id].plans`). */
export interface Plan {
  product_id: string;
  label?: string;
  price: number;
  currency: string;
  period: string;
  trial_days?: number;
}

export interface StoreReceipt {
  transactionId: string;
  productId: string;
  trial: boolean;
}

/**
 * A stand-in for the App Store / Play Billing: buys in the page, no money moves. `decline` makes
 * the next purchase fail as a declined card would. The app reports each step through the SDK's
 * typed purchase events (purchase_started, then purchase_completed or purchase_failed).
 */
export function createFakeStore() {
  let n = 0;
  return {
    decline: false,
    async purchase(plan: Plan): Promise<StoreReceipt> {
      await new Promise((r) => setTimeout(r, 300)); // the store's sheet, briefly
      if (this.decline) throw new Error('card declined');
      return { transactionId: `fake-${Date.now()}-${++n}`, productId: plan.product_id, trial: !!plan.trial_days };
    },
  };
}

export type FakeStore = ReturnType<typeof createFakeStore>;
