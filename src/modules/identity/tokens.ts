import { randomUUID } from 'node:crypto';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type JWK,
  type JWTPayload,
  type CryptoKey,
} from 'jose';
import type { Config } from '../../config.js';
import { AppError } from '../../http/errors.js';
import type { IdentityStore } from './store.js';

const ALG = 'ES256';

export interface VerifiedToken {
  /** Our user id for tokens we issued; the external subject for OIDC tokens. */
  sub: string;
  email?: string;
  name?: string;
  superAdmin: boolean;
  external: boolean;
}

/**
 * The built-in identity provider: ES256 keys kept in the database (so every instance signs
 * and verifies with the same keys), plus optional trust in an external OIDC issuer.
 */
export function createTokenService({
  store,
  config,
}: {
  store: IdentityStore;
  config: Pick<Config, 'jwtIssuer' | 'jwtAudience' | 'tokenTtlSeconds' | 'oidc' | 'superAdminEmails'>;
}) {
  let signing: { kid: string; key: CryptoKey } | undefined;
  let publicJwks: { keys: JWK[] } = { keys: [] };
  let localSet = createLocalJWKSet(publicJwks);
  let lastReload = 0;
  const external = config.oidc ? createRemoteJWKSet(new URL(config.oidc.jwksUrl)) : undefined;

  async function load() {
    const rows = await store.listSigningKeys();
    publicJwks = { keys: rows.map((r) => ({ ...(r.public_jwk as JWK), kid: r.kid, alg: r.alg, use: 'sig' })) };
    localSet = createLocalJWKSet(publicJwks);
    const newest = rows[rows.length - 1];
    if (newest) signing = { kid: newest.kid, key: (await importJWK(newest.private_jwk as JWK, ALG)) as CryptoKey };
    lastReload = Date.now();
  }

  const isSuperAdmin = (email?: string) => !!email && config.superAdminEmails.has(email.toLowerCase());

  return {
    async init() {
      await load();
      if (signing) return;
      const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
      await store.insertSigningKeyIfNone({
        kid: randomUUID(),
        alg: ALG,
        private_jwk: (await exportJWK(privateKey)) as Record<string, unknown>,
        public_jwk: (await exportJWK(publicKey)) as Record<string, unknown>,
      });
      await load();
    },

    jwks: () => publicJwks,

    async issue(user: {
      id: string;
      email: string;
      name: string | null;
    }): Promise<{ token: string; expires_in: number }> {
      if (!signing) throw new Error('token service not initialised');
      const claims: JWTPayload = { email: user.email, name: user.name ?? undefined };
      if (isSuperAdmin(user.email)) claims.super_admin = true;
      const token = await new SignJWT(claims)
        .setProtectedHeader({ alg: ALG, kid: signing.kid, typ: 'JWT' })
        .setSubject(user.id)
        .setIssuer(config.jwtIssuer)
        .setAudience(config.jwtAudience)
        .setIssuedAt()
        .setExpirationTime(`${config.tokenTtlSeconds}s`)
        .sign(signing.key);
      return { token, expires_in: config.tokenTtlSeconds };
    },

    async verify(token: string): Promise<VerifiedToken> {
      let iss: string | undefined;
      try {
        iss = decodeJwt(token).iss;
      } catch {
        throw new AppError('invalid_credentials', 'Malformed token');
      }
      try {
        if (config.oidc && external && iss === config.oidc.issuer) {
          const { payload } = await jwtVerify(token, external, {
            issuer: config.oidc.issuer,
            audience: config.oidc.audience,
            algorithms: ['RS256', 'ES256', 'PS256', 'EdDSA'],
          });
          const email = typeof payload.email === 'string' ? payload.email : undefined;
          if (!email) throw new AppError('invalid_credentials', 'External token carries no email claim');
          return { sub: payload.sub!, email, superAdmin: isSuperAdmin(email), external: true };
        }
        const verifyLocal = () =>
          jwtVerify(token, localSet, { issuer: config.jwtIssuer, audience: config.jwtAudience, algorithms: [ALG] });
        let result;
        try {
          result = await verifyLocal();
        } catch (err) {
          // A key created by another instance after our last load: reload at most every 10 s.
          if ((err as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY' || Date.now() - lastReload < 10_000)
            throw err;
          await load();
          result = await verifyLocal();
        }
        const p = result.payload;
        const email = typeof p.email === 'string' ? p.email : undefined;
        return {
          sub: p.sub!,
          email,
          name: typeof p.name === 'string' ? p.name : undefined,
          superAdmin: p.super_admin === true && isSuperAdmin(email),
          external: false,
        };
      } catch (err) {
        if (err instanceof AppError) throw err;
        throw new AppError('invalid_credentials', 'Token is invalid or expired');
      }
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
