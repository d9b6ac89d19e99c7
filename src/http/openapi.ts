import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifySchema, RouteOptions } from 'fastify';
import { declaredAuth, type AuthLevel, type DeclaredAuth } from './auth.js';
import { EXAMPLES } from './openapi-examples.js';

/** The credentials a client sends, as OpenAPI security schemes (docs/api-conventions.md, Authentication). */
const SECURITY_SCHEMES = {
  sdkKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: "An API key's public key (SDK routes)." },
  apiSecret: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-secret',
    description: "The key's secret, sent with x-api-key (server-to-server routes).",
  },
  exportKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'An API key with the export_data permission.',
  },
  bearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: "A console user's ID token (POST /api/v1/auth/login, or the configured OIDC issuer).",
  },
  tenant: {
    type: 'apiKey',
    in: 'header',
    name: 'x-tenant-id',
    description: 'The organization the call acts in (with bearer).',
  },
  app: { type: 'apiKey', in: 'header', name: 'x-app-id', description: 'The app the call acts in (with bearer).' },
  superAdmin: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'The ID token of a Super Admin (SUPER_ADMIN_EMAILS).',
  },
  refreshCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: 'refresh_token',
    description: 'The refresh token the auth routes set (HttpOnly; sent by the browser to /api/v1/auth only).',
  },
} as const;

type Requirement = Record<keyof typeof SECURITY_SCHEMES, string[]>;
const REQUIREMENTS: Record<AuthLevel, Partial<Requirement>[]> = {
  sdkKey: [{ sdkKey: [] }],
  keyPair: [{ sdkKey: [], apiSecret: [] }],
  exportKey: [{ exportKey: [] }],
  bearer: [{ bearer: [] }],
  customer: [{ bearer: [], tenant: [], app: [] }],
  superAdmin: [{ superAdmin: [] }],
};

/** The authentication pre-handler among a route's hooks (src/http/auth.ts declares each). */
function routeAuth(route: RouteOptions): DeclaredAuth | undefined {
  const hooks = [route.onRequest, route.preValidation, route.preHandler].flat();
  return hooks.map(declaredAuth).find(Boolean);
}

type Schema = FastifySchema & Record<string, unknown>;

/** A route's security from its pre-handler (none: public), and its examples, on a copy of its schema. */
function documentRoute({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }) {
  const auth = routeAuth(route);
  const out: Schema = { ...schema, security: auth ? REQUIREMENTS[auth.level] : (schema?.security ?? []) };
  const documentedBody = route.config?.documentedBody;
  if (documentedBody) out.body = documentedBody;
  if (auth?.role) out['x-min-role'] = auth.role;
  const methods = [route.method].flat();
  const examples = EXAMPLES[`${methods[0]} ${url}`];
  if (examples && methods.length === 1) {
    if (examples.body !== undefined && out.body) out.body = { ...(out.body as object), examples: [examples.body] };
    const response = { ...(out.response as Record<string, object>) };
    for (const [status, value] of Object.entries(examples.responses ?? {}))
      response[status] = { ...response[status], examples: [value] };
    out.response = response;
  }
  return { schema: out, url };
}

type JsonObject = Record<string, unknown>;
const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * OpenAPI 3.0 schema objects are a subset of JSON Schema: the few keywords our TypeBox schemas use
 * beyond it become their 3.0 form (`const` an enum of one, numeric exclusive bounds) or a description
 * (`propertyNames`).
 */
function toOas30Schema(s: unknown): void {
  if (!isObject(s)) return;
  if ('const' in s) {
    s.enum = [s.const];
    delete s.const;
  }
  if (isObject(s.propertyNames)) {
    const { pattern } = s.propertyNames;
    if (typeof pattern === 'string')
      s.description = [s.description, `Keys match ${pattern}.`].filter(Boolean).join(' ');
    delete s.propertyNames;
  }
  // Draft 6+ exclusive bounds are numbers; 3.0 has the draft 4 form, a flag beside minimum/maximum.
  for (const [bound, flag] of [
    ['minimum', 'exclusiveMinimum'],
    ['maximum', 'exclusiveMaximum'],
  ]) {
    if (typeof s[flag] === 'number') {
      s[bound] = s[flag];
      s[flag] = true;
    }
  }
  for (const key of ['$id', '$schema', 'patternProperties']) delete s[key];
  if (isObject(s.properties)) Object.values(s.properties).forEach(toOas30Schema);
  for (const key of ['items', 'additionalProperties', 'not']) toOas30Schema(s[key]);
  for (const key of ['allOf', 'anyOf', 'oneOf'])
    if (Array.isArray(s[key])) (s[key] as unknown[]).forEach(toOas30Schema);
}

/** Every schema object of the document (a copy: the routes' own schemas stay as they are). */
function toOas30(original: JsonObject): JsonObject {
  const doc = JSON.parse(JSON.stringify(original)) as JsonObject;
  const components = doc.components as { schemas?: JsonObject } | undefined;
  Object.values(components?.schemas ?? {}).forEach(toOas30Schema);
  const media = (m: unknown) =>
    Object.values(isObject(m) ? m : {}).forEach((c) => isObject(c) && toOas30Schema(c.schema));
  for (const item of Object.values(doc.paths as JsonObject)) {
    for (const op of Object.values(item as JsonObject)) {
      if (!isObject(op)) continue;
      for (const p of (op.parameters as JsonObject[] | undefined) ?? []) toOas30Schema(p.schema);
      if (isObject(op.requestBody)) media(op.requestBody.content);
      for (const r of Object.values((op.responses as JsonObject | undefined) ?? {})) if (isObject(r)) media(r.content);
    }
  }
  return doc;
}

/** @fastify/swagger's options: the document clients are generated from (GET /docs/json). */
export function swaggerOptions(version: string): FastifyDynamicSwaggerOptions {
  return {
    // Shared schemas keep their $id as the component name (Problem, EventEnvelope) instead of def-N.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    openapi: {
      info: {
        title: 'Mobile SDK backend',
        version,
        description:
          'Config bundles, event ingestion, analytics, export, Option Sets, API keys and webhooks for mobile apps.',
      },
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    transform: documentRoute,
    transformObject: (doc) => toOas30(('openapiObject' in doc ? doc.openapiObject : doc.swaggerObject) as JsonObject),
  };
}
