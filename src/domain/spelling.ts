/**
 * Close spellings, for the did-you-mean of a name that is not there (a spec file's key, a local image's name):
 * Levenshtein's edit distance and the closest of the names known. Pure.
 */

/** The name of `known` that `wanted` most likely meant: the same letters in another case, else a close spelling. */
export function closestName(wanted: string, known: readonly string[]): string | undefined {
  const lower = wanted.toLowerCase();
  const sameLetters = known.find((k) => k.toLowerCase() === lower);
  if (sameLetters !== undefined) return sameLetters;
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (best === undefined || distance < best.distance) best = { name: candidate, distance };
  }
  // A third of the letters may differ, and one always: `maxnum` -> `maxNum`, `worke` -> `worker`.
  const allowed = Math.max(1, Math.floor(wanted.length / 3));
  return best !== undefined && best.distance <= allowed ? best.name : undefined;
}

/** Levenshtein distance. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
