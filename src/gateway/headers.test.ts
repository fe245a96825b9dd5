import { describe, expect, it } from 'vitest';
import { filterResponseHeaders, forwardRequestHeaders, isHopByHop, type RequestHeadInfo } from './headers.js';

const forward = (raw: string[], address: string | undefined = '10.0.0.9', proto = 'http') =>
  forwardRequestHeaders(raw, address, proto);

/** Pairs, for readable expectations. */
function pairs(flat: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i] as string, flat[i + 1] as string]);
  return out;
}

describe('forwardRequestHeaders', () => {
  const cases: { name: string; raw: string[]; address?: string; proto?: string; want: [string, string][] }[] =
    [
      {
        name: 'passes end-to-end headers untouched, in order, and adds X-Forwarded-*',
        raw: ['Host', 'app.localhost:8000', 'Accept', '*/*', 'User-Agent', 'curl/8', 'X-Custom', 'A b'],
        want: [
          ['Accept', '*/*'],
          ['User-Agent', 'curl/8'],
          ['X-Custom', 'A b'],
          ['x-forwarded-for', '10.0.0.9'],
          ['x-forwarded-proto', 'http'],
          ['x-forwarded-host', 'app.localhost:8000'],
        ],
      },
      {
        name: 'drops every hop-by-hop header, whatever its case',
        raw: [
          'connection',
          'keep-alive',
          'Keep-Alive',
          'timeout=5',
          'PROXY-AUTHENTICATE',
          'Basic',
          'Proxy-Authorization',
          'Basic eA==',
          'TE',
          'trailers',
          'Trailer',
          'X-T',
          'Transfer-Encoding',
          'chunked',
          'Upgrade',
          'h2c',
          'Proxy-Connection',
          'keep-alive',
          'Expect',
          '100-continue',
          'X-Kept',
          '1',
        ],
        address: '127.0.0.1',
        want: [
          ['X-Kept', '1'],
          ['x-forwarded-for', '127.0.0.1'],
          ['x-forwarded-proto', 'http'],
        ],
      },
      {
        name: 'drops the headers that Connection names (in any of several Connection headers)',
        raw: [
          'Connection',
          'keep-alive, X-Secret',
          'X-Secret',
          's',
          'connection',
          'x-other ,  Close',
          'X-OTHER',
          'o',
          'X-Kept',
          'k',
        ],
        want: [
          ['X-Kept', 'k'],
          ['x-forwarded-for', '10.0.0.9'],
          ['x-forwarded-proto', 'http'],
        ],
      },
      {
        name: "appends the client's address to existing X-Forwarded-For values, joined",
        raw: ['X-Forwarded-For', '1.1.1.1', 'x-forwarded-for', '2.2.2.2, 3.3.3.3'],
        want: [
          ['x-forwarded-for', '1.1.1.1, 2.2.2.2, 3.3.3.3, 10.0.0.9'],
          ['x-forwarded-proto', 'http'],
        ],
      },
      {
        name: 'replaces X-Forwarded-Proto and X-Forwarded-Host sent by the client',
        raw: ['X-Forwarded-Proto', 'https', 'X-Forwarded-Host', 'evil', 'Host', 'a.example'],
        proto: 'https',
        want: [
          ['x-forwarded-for', '10.0.0.9'],
          ['x-forwarded-proto', 'https'],
          ['x-forwarded-host', 'a.example'],
        ],
      },
      {
        name: 'keeps X-Forwarded-For as it is when the client address is unknown',
        raw: ['X-Forwarded-For', '1.1.1.1'],
        address: '',
        want: [
          ['x-forwarded-for', '1.1.1.1'],
          ['x-forwarded-proto', 'http'],
        ],
      },
      {
        name: 'keeps repeated end-to-end headers and Content-Length',
        raw: ['Cookie', 'a=1', 'Cookie', 'b=2', 'Content-Length', '12'],
        want: [
          ['Cookie', 'a=1'],
          ['Cookie', 'b=2'],
          ['Content-Length', '12'],
          ['x-forwarded-for', '10.0.0.9'],
          ['x-forwarded-proto', 'http'],
        ],
      },
      {
        name: 'does not mistake a header of the same length for a hop-by-hop one',
        raw: ['Tf', 'x', 'Upgradf', 'y', 'keep-alivf', 'z', 'X-Forwarded-Fox', 'w'],
        want: [
          ['Tf', 'x'],
          ['Upgradf', 'y'],
          ['keep-alivf', 'z'],
          ['X-Forwarded-Fox', 'w'],
          ['x-forwarded-for', '10.0.0.9'],
          ['x-forwarded-proto', 'http'],
        ],
      },
    ];
  for (const c of cases) {
    it(c.name, () => {
      expect(pairs(forward(c.raw, c.address ?? '10.0.0.9', c.proto ?? 'http'))).toEqual(c.want);
    });
  }

  it("drops the client's X-Forwarded-Prefix and sets the gateway's own when it stripped one", () => {
    const raw = ['X-Forwarded-Prefix', '/spoofed', 'Accept', '*/*'];
    expect(pairs(forward(raw))).toEqual([
      ['Accept', '*/*'],
      ['x-forwarded-for', '10.0.0.9'],
      ['x-forwarded-proto', 'http'],
    ]);
    expect(pairs(forwardRequestHeaders(raw, '10.0.0.9', 'http', undefined, '/e/app')).at(-1)).toEqual([
      'x-forwarded-prefix',
      '/e/app',
    ]);
  });

  it('drops X-Corral-Forwarded-By (a replica forwarding to another): the worker never sees it', () => {
    expect(pairs(forward(['X-Corral-Forwarded-By', 'rep-a', 'Accept', '*/*']))).toEqual([
      ['Accept', '*/*'],
      ['x-forwarded-for', '10.0.0.9'],
      ['x-forwarded-proto', 'http'],
    ]);
  });

  it('reports Host, Content-Length and chunked framing to the caller', () => {
    const info: RequestHeadInfo = { host: 'stale', contentLength: 'stale', chunked: true };
    forwardRequestHeaders(['Host', 'h', 'Content-Length', '5'], '1.2.3.4', 'http', info);
    expect(info).toEqual({ host: 'h', contentLength: '5', chunked: false });
    forwardRequestHeaders(['transfer-encoding', 'chunked'], '1.2.3.4', 'http', info);
    expect(info).toEqual({ host: undefined, contentLength: undefined, chunked: true });
  });

  it('passes Authorization headers as the policy says: none, all but those holding a Corral key, or all', () => {
    const key = 'sk_abcdefghijkl_0123456789abcdefghijklmnopqrstuv';
    const raw = ['Authorization', `Bearer ${key}`, 'Accept', '*/*', 'authorization', 'Basic YXBwOnB3'];
    const authorizations = (policy: 'drop' | 'drop-corral-keys' | 'pass') =>
      pairs(forwardRequestHeaders(raw, '10.0.0.9', 'http', undefined, undefined, policy)).filter(
        ([name]) => name.toLowerCase() === 'authorization',
      );
    expect(authorizations('drop')).toEqual([]);
    expect(pairs(forward(raw)).filter(([name]) => name.toLowerCase() === 'authorization')).toEqual([]);
    expect(authorizations('drop-corral-keys')).toEqual([['authorization', 'Basic YXBwOnB3']]);
    expect(authorizations('pass')).toEqual([
      ['Authorization', `Bearer ${key}`],
      ['authorization', 'Basic YXBwOnB3'],
    ]);
  });

  it('ignores a dangling name in a malformed array', () => {
    expect(pairs(forward(['X-A', '1', 'X-B']))).toEqual([
      ['X-A', '1'],
      ['x-forwarded-for', '10.0.0.9'],
      ['x-forwarded-proto', 'http'],
    ]);
  });
});

describe('filterResponseHeaders', () => {
  const buf = (values: string[]) => values.map((value) => Buffer.from(value, 'latin1'));

  const cases: {
    name: string;
    raw: (string | Buffer)[];
    override?: Record<string, string>;
    want: [string, string][];
  }[] = [
    {
      name: 'passes end-to-end headers (Buffers read as latin1) and drops hop-by-hop ones',
      raw: buf([
        'Content-Type',
        'text/event-stream',
        'Transfer-Encoding',
        'chunked',
        'Connection',
        'keep-alive',
        'Keep-Alive',
        'timeout=5',
        'Proxy-Authenticate',
        'Basic',
        'Trailer',
        'X-T',
        'Upgrade',
        'h2c',
        'Content-Length',
        '10',
        'X-Name',
        'caf\u00e9',
      ]),
      want: [
        ['Content-Type', 'text/event-stream'],
        ['Content-Length', '10'],
        ['X-Name', 'caf\u00e9'],
      ],
    },
    {
      name: 'drops the headers the Connection header names',
      raw: ['Connection', 'X-Up-Secret', 'X-Up-Secret', 's', 'x-kept', 'k'],
      want: [['x-kept', 'k']],
    },
    {
      name: "keeps repeated Set-Cookie and replaces the worker's copies of gateway headers",
      raw: ['Set-Cookie', 'a=1', 'set-cookie', 'b=2', 'x-corral-worker', 'forged', 'X-Other', 'o'],
      override: { 'X-Corral-Worker': 'w1', 'X-Corral-Queue-Ms': '3' },
      want: [
        ['Set-Cookie', 'a=1'],
        ['set-cookie', 'b=2'],
        ['X-Other', 'o'],
        ['X-Corral-Worker', 'w1'],
        ['X-Corral-Queue-Ms', '3'],
      ],
    },
    {
      name: 'replaces a header only when its name matches letter for letter ignoring case',
      raw: ['X-Ab', 'worker', 'x-a^', 'kept'],
      override: { 'x-aB': 'gw', 'X-A~': 'gw2' },
      want: [
        ['x-a^', 'kept'],
        ['x-aB', 'gw'],
        ['X-A~', 'gw2'],
      ],
    },
    { name: 'handles no headers', raw: [], override: { 'X-A': '1' }, want: [['X-A', '1']] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(pairs(filterResponseHeaders(c.raw, c.override))).toEqual(c.want);
    });
  }

  it('keeps every byte of a non-ASCII value (latin1 in, latin1 out)', () => {
    const value = Buffer.from('caf\u00e9 \u2713', 'utf8');
    const [, out] = filterResponseHeaders([Buffer.from('X-U'), value]);
    expect(Buffer.from(out as string, 'latin1').equals(value)).toBe(true);
  });
});

describe('isHopByHop', () => {
  it.each([
    ['Connection', true],
    ['keep-alive', true],
    ['Proxy-Authenticate', true],
    ['proxy-authorization', true],
    ['TE', true],
    ['Trailer', true],
    ['Transfer-Encoding', true],
    ['UPGRADE', true],
    ['Content-Length', false],
    ['Host', false],
    ['Trailers', false],
    ['', false],
  ])('%s -> %s', (name, want) => {
    expect(isHopByHop(name)).toBe(want);
  });
});
