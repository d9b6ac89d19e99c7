/** Where the app finds the service: the query string first (`?api=…&key=…`), then Vite's env at build time. */
export interface DemoConfig {
  apiUrl: string;
  sdkKey: string;
}

export function readConfig(search = location.search): DemoConfig | null {
  const q = new URLSearchParams(search);
  const apiUrl = q.get('api') ?? import.meta.env.VITE_API_URL ?? '';
  const sdkKey = q.get('key') ?? import.meta.env.VITE_SDK_KEY ?? '';
  return apiUrl && sdkKey ? { apiUrl: apiUrl.replace(/\/+$/, ''), sdkKey } : null;
}
