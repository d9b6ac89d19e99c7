import { Client, type ClientOptions } from './client.js';
import type { Storage } from './storage.js';

/** `AppState` from react-native, as far as the SDK uses it. */
export interface AppStateLike {
  currentState?: string | null;
  addEventListener(type: 'change', listener: (state: string) => void): { remove(): void };
}

type Maybe<T> = T | Promise<T>;
/** AsyncStorage's shape (or any store with getItem / setItem / removeItem, sync or async). */
export interface AsyncStorageLike {
  getItem(key: string): Maybe<string | null | undefined>;
  setItem(key: string, value: string): Maybe<unknown>;
  removeItem(key: string): Maybe<unknown>;
}
/** react-native-mmkv's shape (synchronous). */
export interface MMKVLike {
  getString(key: string): string | undefined;
  set(key: string, value: string): void;
  delete(key: string): void;
}

/** The SDK's Storage over AsyncStorage or MMKV; no dependency on either. */
export function reactNativeStorage(s: AsyncStorageLike | MMKVLike): Storage {
  if ('getString' in s)
    return {
      getItem: async (k) => s.getString(k) ?? null,
      setItem: async (k, v) => s.set(k, v),
      removeItem: async (k) => s.delete(k),
    };
  return {
    getItem: async (k) => (await s.getItem(k)) ?? null,
    setItem: async (k, v) => void (await s.setItem(k, v)),
    removeItem: async (k) => void (await s.removeItem(k)),
  };
}

/**
 * Wires AppState to `setForeground`: `background` closes the session, `active` opens one only
 * after a real background (the client ignores a repeated value); `inactive` (iOS: a call, the
 * app switcher, Control Center) changes nothing. Returns the unsubscribe function.
 */
export function connectAppState(client: Pick<Client, 'setForeground'>, appState: AppStateLike): () => void {
  const sub = appState.addEventListener('change', (s) => {
    if (s === 'background') void client.setForeground(false);
    else if (s === 'active') void client.setForeground(true);
  });
  return () => sub.remove();
}

export type ReactNativeOptions = Omit<ClientOptions, 'storage'> & {
  storage: AsyncStorageLike | MMKVLike;
  appState: AppStateLike;
};

/** A client for React Native: its storage adapter, `framework: react_native`, AppState wired (until shutdown). */
export function createReactNativeClient({ appState, storage, ...o }: ReactNativeOptions): Client {
  const client = new Client({
    ...o,
    storage: reactNativeStorage(storage),
    device: { framework: 'react_native', ...o.device },
  });
  const off = connectAppState(client, appState);
  const shutdown = client.shutdown.bind(client);
  client.shutdown = () => (off(), shutdown());
  return client;
}
