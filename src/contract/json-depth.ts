/**
 * How deep a JSON text nests, found by one pass over the text with a counter (no recursion, no parse): a body is
 * refused for its depth before JSON.parse builds it and JSON.stringify recurses over it (node 20's stringify
 * overflows its stack near 4,170 levels; Python's json, a RunPod worker's, near 1,000).
 */

/**
 * Whether `text` opens more than `max` arrays and objects inside one another (brackets inside strings do not count).
 * Self-contained (it names nothing outside its body): the jobs' body thread runs it from its source
 * (jobs/run-body-parser.ts).
 *
 * Strings are skipped with indexOf rather than read a character at a time: a large input is mostly one long string
 * (a base64 image, a document), and the scan then costs microseconds instead of tens of milliseconds.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  const QUOTE = 0x22;
  const BACKSLASH = 0x5c;
  const OPEN_BRACE = 0x7b;
  const CLOSE_BRACE = 0x7d;
  const OPEN_BRACKET = 0x5b;
  const CLOSE_BRACKET = 0x5d;
  /** The index of the quote that closes the string opened at `open` (the text's length when none does). */
  const closingQuote = (open: number): number => {
    let at = open;
    for (;;) {
      at = text.indexOf('"', at + 1);
      if (at === -1) return text.length;
      // Escaped when an odd number of backslashes stands before it (the opening quote ends the count).
      let backslashes = 0;
      while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
      if (backslashes % 2 === 0) return at;
    }
  };
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = closingQuote(i);
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      if (depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}
