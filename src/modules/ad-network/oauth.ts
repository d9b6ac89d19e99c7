import { createHash, randomBytes } from 'node:crypto';
import { request } from 'undici';
import type { Config } from '../../config.js';

export const SCOPE = 'snapchat-marketing-api';

export interface TokenSet {
  access_token: string;
  refresh_token?: string;
  expires_in: number;
  scope?: string;
}

/** The network's token endpoint answered with an RFC 6749 error (invalid_grant, invalid_client...). */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly status: number,
    description: string,
  ) {
    super(description);
  }
}

export const sha256 = (s: string) => createHash('sha256').update(s).digest('base64url');

/** state and PKCE (S256) for one authorization request. */
export function newAuthorization(cfg: Config['adNetwork']) {
  const state = randomBytes(32).toString('base64url');
  const verifier = randomBytes(48).toString('base64url');
  const url = new URL(`${cfg.authUrl.replace(/\/$/, '')}/authorize`);
  url.search = new URLSearchParams({
    client_id: cfg.clientId,
    redirect_uri: cfg.redirectUri,
    response_type: 'code',
    scope: SCOPE,
    state,
    code_challenge: sha256(verifier),
    code_challenge_method: 'S256',
  }).toString();
  return { state, verifier, url: url.toString() };
}

async function tokenCall(cfg: Config['adNetwork'], form: Record<string, string>): Promise<TokenSet> {
  let res;
  try {
    res = await request(`${cfg.authUrl.replace(/\/$/, '')}/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ ...form, client_id: cfg.clientId, client_secret: cfg.clientSecret }).toString(),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
  } catch (err) {
    throw new OAuthError('unreachable', 0, `token endpoint unreachable: ${(err as Error).message}`);
  }
  const text = await res.body.text();
  let body: any;
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    body = {};
  }
  if (res.statusCode >= 400 || typeof body.access_token !== 'string') {
    throw new OAuthError(
      String(body.error ?? (res.statusCode >= 500 ? 'server_error' : 'invalid_response')),
      res.statusCode,
      String(body.error_description ?? `token endpoint answered ${res.statusCode}`),
    );
  }
  const expires = Number(body.expires_in);
  return {
    access_token: body.access_token,
    refresh_token: body.refresh_token,
    expires_in: Number.isFinite(expires) && expires > 0 ? expires : 1800,
    scope: body.scope,
  };
}

export const exchangeCode = (cfg: Config['adNetwork'], code: string, verifier: string) =>
  tokenCall(cfg, { grant_type: 'authorization_code', code, redirect_uri: cfg.redirectUri, code_verifier: verifier });

export const refreshGrant = (cfg: Config['adNetwork'], refreshToken: string) =>
  tokenCall(cfg, { grant_type: 'refresh_token', refresh_token: refreshToken });
