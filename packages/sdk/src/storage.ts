/**
 * Where the SDK keeps its queue and state. The interface is AsyncStorage's, so React Native apps
 * pass `@react-native-async-storage/async-storage` as it is. Each `setItem` must replace the
 * value whole (no torn writes); the shipped adapters do.
 */
export interface Storage {
  getItem(key: string): Promise<string | null>;
  setItem(key: string, value: string): Promise<void>;
  removeItem(key: string): Promise<void>;
}

/** Keeps nothing across restarts: tests, server-side scripts, or an app that opts out of persistence. */
export function memoryStorage(): Storage & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return {
    data,
    getItem: async (k) => (data.has(k) ? data.get(k)! : null),
    setItem: async (k, v) => void data.set(k, v),
    removeItem: async (k) => void data.delete(k),
  };
}

interface SyncStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Browsers: `window.localStorage` (or any Web Storage object). */
export function localStorageAdapter(
  ls: SyncStorage = (globalThis as unknown as { localStorage: SyncStorage }).localStorage,
): Storage {
  return {
    getItem: async (k) => ls.getItem(k),
    setItem: async (k, v) => ls.setItem(k, v),
    removeItem: async (k) => ls.removeItem(k),
  };
}
