/**
 * The body of `POST endpoint/worker/drain` as waverless's Go provider sends it: `{"workerID": "...", "drain":
 * true|false}`. `workerId` and `worker_id` are read too (the other id spellings of this API); `drain` may be left
 * out (a drain) but is otherwise a JSON boolean, as no other body of this API takes booleans as strings.
 */
import type { ValidationIssue } from '../domain/validate.js';
import type { ParseResult } from './endpoint-input.js';
import { readId } from './endpoint-input.js';

/** Body keys that carry the worker's id, in the order they are read. */
export const WORKER_ID_BODY_KEYS = ['workerID', 'workerId', 'worker_id'] as const;

export function parseDrainBody(body: unknown): ParseResult<{ workerId: string; drain: boolean }> {
  const workerId = readId(body, WORKER_ID_BODY_KEYS);
  if (workerId === undefined)
    return fail('workerID', 'workerID is required: {"workerID": "...", "drain": true}');
  const drain = (body as Record<string, unknown>).drain ?? true;
  if (typeof drain !== 'boolean') return fail('drain', 'drain must be true or false');
  return { ok: true, value: { workerId, drain } };
}

function fail(field: string, message: string): { ok: false; issues: ValidationIssue[] } {
  return { ok: false, issues: [{ field, reason: 'INVALID_FIELD', message }] };
}
