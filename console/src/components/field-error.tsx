import { useState } from 'react';
import { ApiError } from '../api/client';

/**
 * The server's validation messages for some body fields (problem+json `errors[].path`, e.g.
 * `/body/rules/0/op`), shown under the field they concern. The console does not re-check them.
 */
export function FieldError({ error, fields }: { error: unknown; fields: string[] }) {
  const mine = fieldErrors(error, fields);
  if (mine.length === 0) return null;
  return (
    <span role="alert" className="field-error">
      {mine.map((e) => `${e.path.replace(/^\/body\//, '')}: ${e.message}`).join('; ')}
    </span>
  );
}

/** The server's messages about these body fields (or their parts), if `error` is an ApiError. */
export function fieldErrors(error: unknown, fields: string[]) {
  if (!(error instanceof ApiError)) return [];
  return error.errors.filter((e) => fields.some((f) => e.path === `/body/${f}` || e.path.startsWith(`/body/${f}/`)));
}

/**
 * A JSON text area: parse errors shown as typed (the value is not sent until it parses), the
 * server's errors for `fields` shown below it. `onValue` gets the parsed value or undefined.
 */
export function JsonField({
  label,
  initial,
  onValue,
  error,
  fields,
  rows = 8,
}: {
  label: string;
  initial: unknown;
  onValue(v: unknown): void;
  error?: unknown;
  fields: string[];
  rows?: number;
}) {
  const [text, setText] = useState(() => JSON.stringify(initial, null, 2));
  const [bad, setBad] = useState<string | null>(null);
  const change = (t: string) => {
    setText(t);
    try {
      onValue(JSON.parse(t));
      setBad(null);
    } catch (e) {
      onValue(undefined);
      setBad((e as Error).message);
    }
  };
  return (
    <label className="json">
      {label}
      <textarea
        rows={rows}
        spellCheck={false}
        value={text}
        onChange={(e) => change(e.target.value)}
        aria-invalid={bad !== null}
      />
      {bad && (
        <span role="alert" className="field-error">
          Not valid JSON: {bad}
        </span>
      )}
      <FieldError error={error} fields={fields} />
    </label>
  );
}
