/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** The service's base URL, e.g. http://localhost:3000 (the query's `api` wins). */
  readonly VITE_API_URL?: string;
  /** An SDK public key of the app (the query's `key` wins). */
  readonly VITE_SDK_KEY?: string;
}
