import { SDK_VERSION } from './constants.js';

export interface DeviceInfo {
  platform: 'ios' | 'android';
  os: string;
  appVersion: string;
  locale: string;
  country: string;
  framework?: 'native' | 'flutter' | 'react_native';
  frameworkVersion?: string;
}

/** The envelope's `device` object (the same on every event of a client: built once). */
export function deviceFields(d: DeviceInfo): Record<string, string> {
  return {
    platform: d.platform,
    os: d.os,
    app_version: d.appVersion,
    sdk_version: SDK_VERSION,
    framework: d.framework ?? 'native',
    ...(d.frameworkVersion ? { framework_version: d.frameworkVersion } : {}),
    locale: d.locale,
    country: d.country,
  };
}

/**
 * Targeting attributes, for flags and experiments alike: `traits.x`, `device.x` (the envelope's
 * device fields, `user_id`, `anon_id`), or a bare name (traits first, then the device).
 */
export function targeting(
  device: Record<string, string>,
  user: { traits: Record<string, unknown>; userId?: string; anonId: string },
): (attribute: string) => unknown {
  const { traits } = user;
  const dev: Record<string, unknown> = { ...device, user_id: user.userId, anon_id: user.anonId };
  return (a) =>
    a.startsWith('traits.')
      ? traits[a.slice(7)]
      : a.startsWith('device.')
        ? dev[a.slice(7)]
        : a in traits
          ? traits[a]
          : dev[a];
}
