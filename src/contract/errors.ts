/** Turns the domain's validation issues into the API's one error answer, with wire field names. */
import type { ValidationIssue } from '../domain/validate.js';
import { ApiError } from '../errors/api-catalogue.js';
import { wireField, wireMessage } from './fields.js';

/** One 400 for a list of issues: the first one's reason and field lead; all are in `metadata.issues`. */
export function validationError(
  issues: ValidationIssue[],
  mapField: (field: string) => string = wireField,
): ApiError {
  const wireIssues = issues.map((issue) => ({
    ...issue,
    field: mapField(issue.field),
    message: wireMessage(issue.message),
  }));
  const [first] = wireIssues;
  if (!first) return new ApiError('INVALID_FIELD', 'invalid request');
  const more =
    wireIssues.length > 1 ? ` (and ${wireIssues.length - 1} more problem(s), see metadata.issues)` : '';
  return new ApiError(first.reason, `${first.message}${more}`, {
    field: first.field,
    ...first.details,
    issues: wireIssues.map(({ field, reason, message }) => ({ field, reason, message })),
  });
}
