import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import { errors } from '../../http/schemas.js';
import { AppError } from '../../http/errors.js';
import { type RefreshGrant, refreshCookie, refreshTokenOf } from './refresh.js';
import type { IdentityService } from './service.js';
import type { TokenService } from './tokens.js';

const TokenAnswer = Type.Object({
  token: Type.String(),
  expires_in: Type.Integer(),
  user: Type.Object({ id: Type.String(), email: Type.String(), name: Type.Union([Type.String(), Type.Null()]) }),
});
const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254 });
const COOKIE_NOTE =
  'Also sets the `refresh_token` cookie (HttpOnly, SameSite=Strict, Path=/api/v1/auth) that ' +
  'POST /api/v1/auth/refresh exchanges for a new ID token.';
/** The refresh cookie, read by the routes that declare it (OpenAPI security scheme `refreshCookie`). */
const REFRESH_SECURITY = [{ refreshCookie: [] }];

export const identityRoutes =
  ({
    identity,
    tokens,
    secureCookies,
  }: {
    identity: IdentityService;
    tokens: TokenService;
    /** Mark the refresh cookie Secure (the service is reached over https: PUBLIC_URL). */
    secureCookies: boolean;
  }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const cookie = (grant: RefreshGrant | null) => refreshCookie(grant, secureCookies);
    /** The ID token answer; the refresh token goes into its cookie, never into the body. */
    const answer = <T extends { refresh: RefreshGrant }>(reply: FastifyReply, { refresh, ...rest }: T) => {
      reply.header('set-cookie', cookie(refresh));
      return rest;
    };

    app.get(
      '/api/v1/auth/signup-enabled',
      {
        schema: {
          tags: ['auth'],
          summary: 'Whether self-service signup is open',
          response: { 200: Type.Object({ enabled: Type.Boolean() }) },
        },
      },
      async () => ({ enabled: await identity.signupEnabled() }),
    );

    app.post(
      '/api/v1/auth/signup',
      {
        schema: {
          tags: ['auth'],
          summary: 'Create an account and receive an ID token',
          description: COOKIE_NOTE,
          body: Type.Object({
            email: Email,
            password: Type.String({ minLength: 10, maxLength: 256 }),
            name: Type.Optional(Type.String({ maxLength: 200 })),
          }),
          response: { 201: TokenAnswer, ...errors(400, 403, 409, 429) },
        },
      },
      async (req, reply) => reply.status(201).send(answer(reply, await identity.signup(req.body, req.ip))),
    );

    app.post(
      '/api/v1/auth/login',
      {
        schema: {
          tags: ['auth'],
          summary: 'Exchange email and password for an ID token',
          description: `Failed attempts are throttled per account and per client address (429 with Retry-After). ${COOKIE_NOTE}`,
          body: Type.Object({ email: Email, password: Type.String({ minLength: 1, maxLength: 256 }) }),
          response: { 200: TokenAnswer, ...errors(400, 401, 429) },
        },
      },
      async (req, reply) => answer(reply, await identity.login(req.body, req.ip)),
    );

    app.post(
      '/api/v1/auth/refresh',
      {
        schema: {
          tags: ['auth'],
          summary: 'Exchange the refresh cookie for a new ID token (and a new cookie)',
          description:
            'Each refresh token works once: the answer sets its successor. Presenting a used one again revokes ' +
            'the sign-in (every token of it). A sign-in ends at the latest REFRESH_TTL_S after it began.',
          security: REFRESH_SECURITY,
          response: { 200: TokenAnswer, ...errors(401) },
        },
      },
      async (req, reply) => {
        try {
          return answer(reply, await identity.refresh(refreshTokenOf(req.headers.cookie)));
        } catch (err) {
          // The browser drops a cookie that no longer works.
          if (err instanceof AppError) reply.header('set-cookie', cookie(null));
          throw err;
        }
      },
    );

    app.post(
      '/api/v1/auth/logout',
      {
        schema: {
          tags: ['auth'],
          summary: 'End the sign-in: revoke its refresh tokens and clear the cookie',
          description: 'ID tokens already issued stay valid until they expire (TOKEN_TTL_S); the client drops its own.',
          security: REFRESH_SECURITY,
          response: { 204: Type.Null(), ...errors(401) },
        },
      },
      async (req, reply) => {
        reply.header('set-cookie', cookie(null));
        const token = refreshTokenOf(req.headers.cookie);
        if (!token) throw new AppError('missing_credentials', 'No refresh token: nothing to sign out of');
        await identity.logout(token);
        return reply.status(204).send(null);
      },
    );

    app.get(
      '/.well-known/jwks.json',
      {
        schema: { tags: ['auth'], summary: 'Public keys of the built-in identity provider' },
      },
      async (_req, reply) => reply.header('cache-control', 'public, max-age=300').send(tokens.jwks()),
    );
  };
