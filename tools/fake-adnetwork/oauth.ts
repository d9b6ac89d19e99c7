import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { World } from './state.js';

const token = (prefix: string) => `${prefix}${randomBytes(24).toString('hex')}`;

function oauthError(reply: FastifyReply, status: number, error: string, description: string) {
  return reply.status(status).send({ error, error_description: description });
}

/** OAuth 2.0 server (authorization code with optional PKCE, refresh) like accounts.snapchat.com. */
export function registerOAuth(app: FastifyInstance, w: World) {
  const clientId = w.opts.clientId ?? 'fake-client-id';
  const clientSecret = w.opts.clientSecret ?? 'fake-client-secret';

  // The fake user consents at once; the browser is sent back to redirect_uri with a one-time code.
  app.get('/login/oauth2/authorize', async (req, reply) => {
    const q = req.query as Record<string, string | undefined>;
    if (q.client_id !== clientId) return oauthError(reply, 400, 'invalid_client', 'Unknown client_id');
    if (q.response_type !== 'code')
      return oauthError(reply, 400, 'unsupported_response_type', 'response_type must be code');
    if (!q.redirect_uri) return oauthError(reply, 400, 'invalid_request', 'redirect_uri is required');
    if (q.scope !== 'snapchat-marketing-api')
      return oauthError(reply, 400, 'invalid_scope', 'scope must be snapchat-marketing-api');
    if (q.code_challenge && q.code_challenge_method !== 'S256')
      return oauthError(reply, 400, 'invalid_request', 'code_challenge_method must be S256');
    const code = token('code_');
    w.codes.set(code, {
      clientId,
      redirectUri: q.redirect_uri,
      challenge: q.code_challenge,
      method: q.code_challenge_method,
      expiresAt: Date.now() + 10 * 60_000,
      used: false,
      scope: q.scope,
    });
    const to = new URL(q.redirect_uri);
    to.searchParams.set('code', code);
    if (q.state !== undefined) to.searchParams.set('state', q.state);
    return reply.redirect(to.toString(), 302);
  });

  app.post('/login/oauth2/access_token', async (req, reply) => {
    const b = (req.body ?? {}) as Record<string, string | undefined>;
    const log = (status: number) => w.tokenRequests.push({ grant_type: String(b.grant_type), at: Date.now(), status });
    if (b.client_id !== clientId || b.client_secret !== clientSecret) {
      log(401);
      return oauthError(reply, 401, 'invalid_client', 'Client authentication failed');
    }
    const expiresIn = w.opts.expiresIn ?? 3600;
    const issue = (grantId: string) => {
      const access = token('0.');
      w.tokens.set(access, { grantId, expiresAt: Date.now() + expiresIn * 1000 });
      return access;
    };
    if (b.grant_type === 'authorization_code') {
      const c = b.code ? w.codes.get(b.code) : undefined;
      if (!c || c.used || c.expiresAt < Date.now()) {
        log(400);
        return oauthError(reply, 400, 'invalid_grant', 'Invalid, expired or already used authorization code');
      }
      c.used = true;
      if (b.redirect_uri !== c.redirectUri) {
        log(400);
        return oauthError(reply, 400, 'invalid_grant', 'redirect_uri does not match the authorization request');
      }
      if (c.challenge) {
        const calc = b.code_verifier ? createHash('sha256').update(b.code_verifier).digest('base64url') : '';
        if (calc !== c.challenge) {
          log(400);
          return oauthError(reply, 400, 'invalid_grant', 'PKCE verification failed');
        }
      }
      const grant = { id: randomUUID(), clientId, refreshToken: token('rt_'), revoked: false, scope: c.scope };
      w.grants.set(grant.id, grant);
      log(200);
      return {
        access_token: issue(grant.id),
        token_type: 'Bearer',
        expires_in: expiresIn,
        refresh_token: grant.refreshToken,
        scope: grant.scope,
      };
    }
    if (b.grant_type === 'refresh_token') {
      const grant = [...w.grants.values()].find((g) => g.refreshToken === b.refresh_token);
      if (!grant || grant.revoked) {
        log(400);
        return oauthError(reply, 400, 'invalid_grant', 'Invalid or revoked refresh token');
      }
      if (w.opts.refreshMode === 'rotating') grant.refreshToken = token('rt_');
      log(200);
      return {
        access_token: issue(grant.id),
        token_type: 'Bearer',
        expires_in: expiresIn,
        refresh_token: grant.refreshToken,
        scope: grant.scope,
      };
    }
    log(400);
    return oauthError(reply, 400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
  });
}

/** Resolves a Bearer access token; null when unknown, expired or its grant is revoked. */
export function checkToken(
  w: World,
  authorization: string | undefined,
): { token: string; grantId: string; clientId: string } | null {
  const m = /^Bearer (.+)$/i.exec(authorization ?? '');
  const t = m ? w.tokens.get(m[1]) : undefined;
  if (!m || !t || t.expiresAt < Date.now()) return null;
  const grant = w.grants.get(t.grantId);
  if (!grant || grant.revoked) return null;
  return { token: m[1], grantId: grant.id, clientId: grant.clientId };
}
