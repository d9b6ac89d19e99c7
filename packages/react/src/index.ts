import type { Client, ExperimentResult, FlowRun } from '@mobile-sdk-backend/sdk';
import { paywall, type PaywallRun } from '@mobile-sdk-backend/sdk/paywalls';
import { createContext, createElement, useContext, useMemo, useSyncExternalStore, type ReactNode } from 'react';

export type { PaywallDefinition, PaywallRun } from '@mobile-sdk-backend/sdk/paywalls';

/** The client calls the bindings use (structural: any build of the SDK's Client fits). */
export type SdkClient = Pick<
  Client,
  'subscribe' | 'getBundle' | 'getAnonId' | 'getFlag' | 'getRemoteConfig' | 'getExperiment' | 'flow' | 'track'
> &
  Pick<
    Client,
    | 'purchaseStarted'
    | 'purchaseCompleted'
    | 'purchaseFailed'
    | 'purchaseCanceled'
    | 'purchasePending'
    | 'purchaseRestored'
  >;

/** One per client: a version that grows on each client change, the snapshot React compares. */
interface Store {
  client: SdkClient;
  version: number;
  subscribe(listener: () => void): () => void;
  snapshot(): number;
}

const stores = new WeakMap<SdkClient, Store>();

function storeOf(client: SdkClient): Store {
  let store = stores.get(client);
  if (store) return store;
  const listeners = new Set<() => void>();
  const s: Store = {
    client,
    version: 0,
    subscribe: (l) => {
      listeners.add(l);
      return () => void listeners.delete(l);
    },
    snapshot: () => s.version,
  };
  // One subscription per client, for the client's lifetime: every hook shares it.
  client.subscribe(() => {
    s.version++;
    for (const l of listeners) l();
  });
  stores.set(client, (store = s));
  return store;
}

const SdkContext = createContext<Store | null>(null);

/** Makes `client` the one the hooks below read. Create the client once (outside render) and `start()` it. */
export function SdkProvider(props: { client: SdkClient; children?: ReactNode }) {
  const store = useMemo(() => storeOf(props.client), [props.client]);
  return createElement(SdkContext.Provider, { value: store }, props.children);
}

/**
 * The client, the change version (re-renders on each change; the memoised hooks list it as a
 * dependency so a new bundle, identify or flow progress recomputes them), and whether the config is there yet.
 */
function useSdk(): { client: SdkClient; version: number; ready: boolean } {
  const store = useContext(SdkContext);
  if (!store) throw new Error('@mobile-sdk-backend/react: wrap the tree in <SdkProvider client={client}>');
  const version = useSyncExternalStore(store.subscribe, store.snapshot, store.snapshot);
  const { client } = store;
  // Loading: storage not read yet, or no bundle at all (no cache, no bundled config, none downloaded).
  return { client, version, ready: client.getAnonId() !== undefined && client.getBundle() !== null };
}

/** The client given to `SdkProvider`. */
export function useSdkClient(): SdkClient {
  return useSdk().client;
}

/** `getFlag(key, default)`; `defaultValue` (undefined when omitted) while loading. */
export function useFlag(key: string, defaultValue?: boolean): boolean | undefined {
  const { client, ready } = useSdk();
  return ready ? client.getFlag(key, defaultValue as boolean) : defaultValue;
}

/** `getRemoteConfig(key, default)`; `defaultValue` (undefined when omitted) while loading. */
export function useRemoteConfig<T = unknown>(key: string, defaultValue?: T): T | undefined {
  const { client, ready } = useSdk();
  return ready ? client.getRemoteConfig<T | undefined>(key, defaultValue) : defaultValue;
}

/**
 * `getExperiment(key, default)` (the first assignment read queues the exposure); while loading,
 * `{ inExperiment: false, variant: null, value: defaultValue }`, as for an unknown experiment.
 */
export function useExperiment<T = unknown>(key: string, defaultValue?: T): ExperimentResult & { value: T | undefined } {
  const { client, ready, version } = useSdk();
  return useMemo(
    () =>
      ready
        ? client.getExperiment<T | undefined>(key, defaultValue)
        : { inExperiment: false, variant: null, value: defaultValue },
    [client, ready, version, key],
  );
}

/** `client.flow(flowId)`: undefined while loading, null when the bundle has no such flow; re-renders on progress. */
export function useFlow(flowId: string): FlowRun | null | undefined {
  const { client, ready, version } = useSdk();
  return useMemo(() => (ready ? client.flow(flowId) : undefined), [client, ready, version, flowId]);
}

/**
 * The paywall to show for a placement (`paywall(client, id)` of `@mobile-sdk-backend/sdk/paywalls`):
 * undefined while loading, null when the bundle has no such paywall. Call `shown()` / `closed()`
 * from an effect; its purchase helpers carry `paywall_id`.
 */
export function usePaywall(paywallId: string): PaywallRun | null | undefined {
  const { client, ready, version } = useSdk();
  return useMemo(() => (ready ? paywall(client, paywallId) : undefined), [client, ready, version, paywallId]);
}
