/**
 * Output in the shape a page shows, for the docs-examples test: the JSON objects a command printed, whether the
 * fields a page's example output names are there (not their values: ids, times and counts differ on every run), and
 * the ids the page showed paired with the ones this run printed, so that later blocks can use them.
 */

/** The JSON objects in `text`, in order: curl prints answers back to back without a newline between them. */
export function jsonObjectsIn(text: string): unknown[] {
  const values: unknown[] = [];
  for (let start = text.indexOf('{'); start !== -1; ) {
    const end = closingBrace(text, start);
    const value = end === -1 ? undefined : parseJson(text.slice(start, end + 1));
    if (value !== undefined) values.push(value);
    start = text.indexOf('{', value === undefined ? start + 1 : end + 1);
  }
  return values;
}

/** The index of the `}` that closes the `{` at `start`, skipping strings; -1 when it never closes. */
function closingBrace(text: string, start: number): number {
  let depth = 0;
  for (let index = start; index < text.length; index++) {
    const char = text[index];
    if (char === '"') {
      for (index++; index < text.length && text[index] !== '"'; index++) {
        if (text[index] === '\\') index++;
      }
    } else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return index;
  }
  return -1;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The key a page writes for "and the other fields". */
const ELLIPSIS_KEY = '...';
/** Fields that name something made by the run: the page's value stands for the run's in later blocks. */
const ID_FIELD = /^(id|.*Id)$/;

export interface ShapeMatch {
  /** The fields the page shows and the output lacks, as paths (`endpoint.workers[0].id`). */
  missing: string[];
  /** The page's ids (values of `id` fields) and this run's values of the same fields. */
  ids: Map<string, string>;
}

/** How `actual` has the shape of `expected`: the fields of `expected`'s objects, down through objects and arrays. */
export function matchShape(expected: unknown, actual: unknown, path = ''): ShapeMatch {
  const result: ShapeMatch = { missing: [], ids: new Map() };
  const merge = (inner: ShapeMatch) => {
    result.missing.push(...inner.missing);
    for (const [from, to] of inner.ids) result.ids.set(from, to);
  };
  if (isObject(expected)) {
    if (!isObject(actual)) return { missing: [path || '(an object)'], ids: result.ids };
    // A page that shows `{}` as a whole answer shows an answer with no fields (not an error's).
    if (path === '' && Object.keys(expected).length === 0 && Object.keys(actual).length > 0) {
      return { missing: [`no fields (it has ${Object.keys(actual).join(', ')})`], ids: result.ids };
    }
    // An empty object inside an answer is a map with no entries yet (requests by status, workers by state).
    if (path !== '' && Object.keys(actual).length === 0) return result;
    for (const [key, value] of Object.entries(expected)) {
      if (key === ELLIPSIS_KEY) continue;
      const field = path ? `${path}.${key}` : key;
      if (!(key in actual)) {
        result.missing.push(field);
        continue;
      }
      const given = actual[key];
      if (ID_FIELD.test(key) && typeof value === 'string' && typeof given === 'string' && value !== given) {
        result.ids.set(value, given);
      }
      merge(matchShape(value, given, field));
    }
  } else if (Array.isArray(expected) && Array.isArray(actual) && expected.length > 0 && actual.length > 0) {
    merge(matchShape(expected[0], actual[0], `${path}[0]`));
  }
  return result;
}

/**
 * The first object among `outputs` (from `from` on) that has every field `expected` shows: its index and match, or
 * the closest miss (fewest fields missing) when none has them all.
 */
export function findShape(
  expected: unknown,
  outputs: unknown[],
  from: number,
): { found: true; index: number; match: ShapeMatch } | { found: false; closest: ShapeMatch | undefined } {
  let closest: ShapeMatch | undefined;
  for (let index = from; index < outputs.length; index++) {
    const match = matchShape(expected, outputs[index]);
    if (match.missing.length === 0) return { found: true, index, match };
    if (!closest || match.missing.length < closest.missing.length) closest = match;
  }
  return { found: false, closest };
}
