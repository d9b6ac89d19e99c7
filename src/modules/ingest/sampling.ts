import murmur from 'murmurhash3js';

/** Deterministic per device, so a device's events are all kept or all dropped. */
export function keepBySampling(anonId: string, eventName: string, rate: number): boolean {
  if (rate >= 1 || eventName.startsWith('purchase_')) return true;
  return murmur.x86.hash32(anonId) % 10_000 < rate * 10_000;
}
