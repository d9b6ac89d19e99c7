import { SDK_VERSION } from './constants.js';
import type { HttpAnswer } from './http.js';
import { compareVersions } from './rules.js';
import type { Storage } from './storage.js';

/** The config bundle: the config-bundle answer's `data`, and the shape of `service-config.json`. */
export interface Bundle {
  bundle_version: number;
  sdk_min_version?: string;
  generated_at?: string;
  size_bytes?: number;
  content: {
    remote_config?: Record<string, unknown>;
    feature_flags?: Record<string, FlagDefinition>;
    experiments?: Record<string, import('./experiments.js').ExperimentDefinition>;
    onboarding_flows?: Record<string, import('./flows.js').FlowDefinition>;
    [key: string]: unknown;
  };
}
export interface FlagDefinition {
  enabled: boolean;
  rules?: import('./rules.js').Rule[];
  rollout_pct?: number;
}

export type Get = (path: string, headers: Record<string, string>, timeoutMs: number) => Promise<HttpAnswer>;

const BUNDLE_PATH = '/api/v1/sdk/config-bundle';

/** False when the bundle asks for a newer SDK than this one (`sdk_min_version`). */
const fits = (b: Bundle) => !b.sdk_min_version || compareVersions(SDK_VERSION, b.sdk_min_version) >= 0;

/**
 * Resolves the config: remote, then the cached copy, then the bundled file (of cache and bundled
 * file, the higher `bundle_version`, so an app update that ships a newer file wins over an old
 * cache). A downloaded bundle becomes the cache. `checkForUpdate` asks the version endpoint and
 * downloads only when `bundle_version` grew; a config stream can call it on every change notice.
 * A bundle whose `sdk_min_version` is above this SDK's version is not applied (reported once).
 */
export class ConfigStore {
  bundle: Bundle | null = null;
  private etag: string | null = null;
  private versionEtag: string | null = null;
  /** The newest bundle_version refused for its sdk_min_version: not downloaded again. */
  private refused = -1;

  constructor(
    private storage: Storage,
    private key: string,
    private get: Get,
    private bundled: Bundle | undefined,
    private tooNew: (b: Bundle) => void,
    private changed: () => void,
  ) {}

  async load(): Promise<void> {
    const text = await this.storage.getItem(this.key);
    const cached = text ? (JSON.parse(text) as { bundle: Bundle; etag: string | null }) : null;
    const b = this.bundled;
    if (cached && fits(cached.bundle) && (!b || cached.bundle.bundle_version >= b.bundle_version)) {
      this.bundle = cached.bundle;
      this.etag = cached.etag;
    } else this.bundle = b ?? null;
  }

  /** Downloads the bundle unless the cached one is current (If-None-Match); applied once `accept` says yes. */
  async download(timeoutMs: number, accept: Promise<boolean> | boolean = true): Promise<void> {
    const r = await this.get(BUNDLE_PATH, this.etag ? { 'if-none-match': this.etag } : {}, timeoutMs);
    if (r.status !== 200 || !r.body?.data?.content || !(await accept)) return;
    const bundle = r.body.data as Bundle;
    if (this.bundle && bundle.bundle_version < this.bundle.bundle_version) return;
    if (!fits(bundle)) {
      if (this.refused < 0) this.tooNew(bundle);
      this.refused = Math.max(this.refused, bundle.bundle_version);
      return;
    }
    this.bundle = bundle;
    this.etag = r.header('etag');
    this.changed();
    await this.storage.setItem(this.key, JSON.stringify({ bundle, etag: this.etag }));
  }

  /** Polls the version endpoint; downloads when the service has a newer bundle. True when it did. */
  async checkForUpdate(timeoutMs: number): Promise<boolean> {
    const r = await this.get(
      `${BUNDLE_PATH}/version`,
      this.versionEtag ? { 'if-none-match': this.versionEtag } : {},
      timeoutMs,
    );
    if (r.status !== 200 || typeof r.body?.data?.bundle_version !== 'number') return false;
    this.versionEtag = r.header('etag');
    const v = r.body.data.bundle_version;
    if ((this.bundle && v <= this.bundle.bundle_version) || v <= this.refused) return false;
    const before = this.bundle?.bundle_version;
    await this.download(timeoutMs);
    return this.bundle?.bundle_version !== before;
  }
}
