import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { errors } from '../../http/schemas.js';
import type { IdentityService } from './service.js';
import type { TokenService } from './tokens.js';

const TokenAnswer = Type.Object({
  token: Type.String(),
  expires_in: Type.Integer(),
  user: Type.Object({ id: Type.String(), email: Type.String(), name: Type.Union([Type.String(), Type.Null()]) }),
});
const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254 });

export const identityRoutes =
  ({ identity, tokens }: { identity: IdentityService; tokens: TokenService }): FastifyPluginAsyncTypebox =>
  async (app) => {
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
          body: Type.Object({
            email: Email,
            password: Type.String({ minLength: 10, maxLength: 256 }),
            name: Type.Optional(Type.String({ maxLength: 200 })),
          }),
          response: { 201: TokenAnswer, ...errors(400, 403, 409) },
        },
      },
      async (req, reply) => reply.status(201).send(await identity.signup(req.body)),
    );

    app.post(
      '/api/v1/auth/login',
      {
        schema: {
          tags: ['auth'],
          summary: 'Exchange email and password for an ID token',
          body: Type.Object({ email: Email, password: Type.String({ minLength: 1, maxLength: 256 }) }),
          response: { 200: TokenAnswer, ...errors(400, 401) },
        },
      },
      async (req) => identity.login(req.body),
    );

    app.get(
      '/.well-known/jwks.json',
      {
        schema: { tags: ['auth'], summary: 'Public keys of the built-in identity provider' },
      },
      async (_req, reply) => reply.header('cache-control', 'public, max-age=300').send(tokens.jwks()),
    );
  };
