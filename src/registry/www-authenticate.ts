/**
 * `WWW-Authenticate` challenges (RFC 7235) as registries send them: `Basic realm="..."` or
 * `Bearer realm="https://auth.example/token",service="...",scope="repository:a/b:pull"`, possibly several. Pure.
 */

export interface Challenge {
  /** Lowercase: `basic`, `bearer`. */
  scheme: string;
  /** Lowercase keys; quoted values unescaped. */
  params: Record<string, string>;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;

/** Every challenge in the header; an unreadable tail is dropped, not guessed at. */
export function parseWwwAuthenticate(header: string): Challenge[] {
  const challenges: Challenge[] = [];
  let rest = header;
  const skip = (pattern: RegExp) => {
    rest = rest.replace(pattern, '');
  };
  for (;;) {
    skip(/^[\s,]+/);
    const scheme = TOKEN.exec(rest)?.[0];
    if (!scheme) return challenges;
    rest = rest.slice(scheme.length);
    const challenge: Challenge = { scheme: scheme.toLowerCase(), params: {} };
    challenges.push(challenge);
    for (;;) {
      const param = /^[\s,]*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*=\s*/.exec(rest);
      // A token not followed by `=` starts the next challenge.
      if (!param?.[1]) break;
      rest = rest.slice(param[0].length);
      const value = readValue(rest);
      if (!value) return challenges;
      challenge.params[param[1].toLowerCase()] = value.value;
      rest = rest.slice(value.length);
      skip(/^\s*/);
      if (!rest.startsWith(',')) break;
    }
  }
}

function readValue(text: string): { value: string; length: number } | undefined {
  if (!text.startsWith('"')) {
    const token = /^[^\s,"]*/.exec(text)?.[0] ?? '';
    return { value: token, length: token.length };
  }
  let value = '';
  for (let i = 1; i < text.length; i += 1) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length) {
      value += text[i + 1];
      i += 1;
    } else if (c === '"') {
      return { value, length: i + 1 };
    } else {
      value += c;
    }
  }
  return undefined;
}
