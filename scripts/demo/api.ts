/** A JSON call's answer: status, parsed body (or text), headers. */
export interface Answer<T = any> {
  status: number;
  body: T;
  text: string;
}

export type Headers = Record<string, string>;

/**
 * The service's public HTTP API as the demo seeding uses it: JSON in, JSON out. `expect` lists the
 * statuses the caller handles; any other one throws with the answer's text (a problem+json detail).
 */
export function api(baseUrl: string) {
  async function call<T = any>(
    method: string,
    path: string,
    body: unknown,
    headers: Headers,
    expect: number[],
  ): Promise<Answer<T>> {
    const res = await fetch(baseUrl + path, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    if (!expect.includes(res.status)) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
    return { status: res.status, body: parsed as T, text };
  }
  return {
    get: <T = any>(p: string, h: Headers = {}, expect = [200]) => call<T>('GET', p, undefined, h, expect),
    post: <T = any>(p: string, b: unknown, h: Headers = {}, expect = [200, 201]) => call<T>('POST', p, b, h, expect),
    put: <T = any>(p: string, b: unknown, h: Headers = {}, expect = [200]) => call<T>('PUT', p, b, h, expect),
    patch: <T = any>(p: string, b: unknown, h: Headers = {}, expect = [200]) => call<T>('PATCH', p, b, h, expect),
  };
}

export type Api = ReturnType<typeof api>;
