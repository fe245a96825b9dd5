/** Query-string readers for the API's GET routes (page, integers, ids); a bad value fails with INVALID_QUERY. */

import type { Page } from '../domain/records.js';
import { ApiError } from '../errors/api-catalogue.js';

export const MAX_PAGE_SIZE = 1000;

type Query = Record<string, string | string[] | undefined>;

/** `pageSize` (default and maximum 1000) and zero-based `pageNum` (default 0). */
export function readPage(query: Query): Page {
  const size = readInteger(query, 'pageSize', MAX_PAGE_SIZE, 1);
  const num = readInteger(query, 'pageNum', 0, 0);
  const limit = Math.min(size, MAX_PAGE_SIZE);
  return { limit, offset: num * limit };
}

export function readInteger(query: Query, name: string, fallback: number, min: number): number {
  const raw = first(query[name]);
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) {
    throw new ApiError('INVALID_QUERY', `${name} must be an integer of at least ${min}, got "${raw}"`, {
      field: name,
    });
  }
  return value;
}

/** The first present, non-empty value among the given query keys. */
export function readQueryId(query: Query, names: readonly string[]): string {
  for (const name of names) {
    const value = first(query[name])?.trim();
    if (value) return value;
  }
  throw new ApiError('INVALID_QUERY', `the query needs ${names.join(' or ')}`, { field: names[0] });
}

/** A query key's value, or undefined when absent or empty. */
export function readOptional(query: Query, name: string): string | undefined {
  const value = first(query[name])?.trim();
  return value === '' ? undefined : value;
}

function first(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text?.includes('\u0000')) {
    throw new ApiError('INVALID_QUERY', 'query parameters must not contain the NUL character (%00)');
  }
  return text;
}
