import { validateRules } from '@mobile-sdk-backend/sdk/rules';
import { AppError } from '../../http/errors.js';

/**
 * A flag's targeting rules must be in the SDK's rule language, or devices could not evaluate
 * them: the language (operators and shapes) is defined once, in the SDK package.
 */
export function checkFlagRules(rules: unknown[]): void {
  const problems = validateRules(rules);
  if (!problems.length) return;
  const first = problems[0];
  throw new AppError(
    'validation_failed',
    `rules${first.path}: ${first.message}`,
    problems.map((p) => ({ path: `/body/rules${p.path}`, message: p.message })),
  );
}
