import net from 'node:net';
import { Agent, request } from 'undici';
import { guardedLookup, isPrivateAddress, RefusedTargetError } from './guard.js';

export interface OutboundResult {
  /** HTTP status, or null when no response arrived (refused target, DNS, connect error, timeout). */
  status: number | null;
  headers: Record<string, string>;
  /** First KB of the body, for delivery logs. */
  bodySnippet: string;
  durationMs: number;
  error?: string;
  refused?: boolean;
}

/**
 * The one HTTP client for calls to customer-controlled URLs (webhooks, export callbacks):
 * timeouts, no redirects, and private targets refused at connect time unless allowed.
 */
export function createOutboundClient({
  allowPrivateTargets,
  timeoutMs = 10_000,
}: {
  allowPrivateTargets: boolean;
  timeoutMs?: number;
}) {
  const agent = new Agent({
    connect: { lookup: guardedLookup(allowPrivateTargets), timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connections: 64,
  });

  return {
    async post(url: string, body: string, headers: Record<string, string>): Promise<OutboundResult> {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      try {
        const target = new URL(url);
        const host = target.hostname.replace(/^\[|\]$/g, '');
        // IP literals skip DNS, so the connect-time lookup guard never sees them.
        if (!allowPrivateTargets && net.isIP(host) && isPrivateAddress(host))
          throw new RefusedTargetError(`refused private address ${host}`);
        const res = await request(target, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'user-agent': 'mobile-sdk-backend-webhooks/1', ...headers },
          dispatcher: agent,
          signal: AbortSignal.timeout(timeoutMs),
        });
        let snippet = '';
        for await (const chunk of res.body) {
          if (snippet.length < 1024) snippet += chunk.toString('utf8');
        }
        const flat: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') flat[k] = v;
        return { status: res.statusCode, headers: flat, bodySnippet: snippet.slice(0, 1024), durationMs: elapsed() };
      } catch (err) {
        const refused =
          err instanceof RefusedTargetError || (err as { cause?: unknown }).cause instanceof RefusedTargetError;
        return {
          status: null,
          headers: {},
          bodySnippet: '',
          durationMs: elapsed(),
          refused,
          error: refused
            ? 'target refused: private or internal address'
            : (err as Error).name === 'TimeoutError'
              ? 'timeout'
              : String((err as Error).message ?? err).slice(0, 200),
        };
      }
    },
    close: () => agent.close(),
  };
}

export type OutboundClient = ReturnType<typeof createOutboundClient>;
