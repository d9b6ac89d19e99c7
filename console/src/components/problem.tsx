import { ApiError } from '../api/client';

/** An error as the API gave it: status, then its detail (a 403 reads "Forbidden: ..."). */
export function Problem({ error }: { error: unknown }) {
  if (!error) return null;
  const text =
    error instanceof ApiError
      ? `${error.status === 403 ? 'Forbidden' : `Error ${error.status}`}: ${error.message}`
      : `Error: ${error instanceof Error ? error.message : String(error)}`;
  return (
    <p role="alert" className="problem">
      {text}
    </p>
  );
}
