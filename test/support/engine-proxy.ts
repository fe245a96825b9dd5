/**
 * A Docker engine a test can take away and give back without touching the machine's dockerd: an HTTP proxy on a
 * unix socket of its own in front of /var/run/docker.sock (point `corral serve` at it with DOCKER_HOST). stop()
 * closes it and every connection through it (new ones are refused, as when dockerd is down); start() listens
 * again. Every container it creates carries the test's label, and listings, events and volumes through it see only
 * those, so that the server under test neither adopts nor removes what other suites run on the same engine. And
 * since other servers on the engine would adopt and remove what it runs, Corral's labels are stored under another
 * prefix of the same length (`corral.dev/` becomes HIDDEN_PREFIX on the engine) and given back as Corral's in
 * listings, inspections and events: only the server behind this proxy sees them as Corral's.
 */
import { existsSync, unlinkSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

const ENGINE_SOCKET = '/var/run/docker.sock';
const CORRAL_PREFIX = 'corral.dev/';
/** Same length as CORRAL_PREFIX, so that rewriting never changes a length a stream relies on. */
export const HIDDEN_PREFIX = 'corrax.dev/';
const hide = (text: string) => text.replaceAll(CORRAL_PREFIX, HIDDEN_PREFIX);
const reveal = (text: string) => text.replaceAll(HIDDEN_PREFIX, CORRAL_PREFIX);

export class EngineProxy {
  readonly socketPath: string;
  readonly #label: [string, string];
  #server: Server | undefined;
  readonly #open = new Set<{ destroy(): unknown }>();

  constructor(options: { socketPath: string; label: [string, string] }) {
    this.socketPath = options.socketPath;
    this.#label = options.label;
  }

  get dockerHost(): string {
    return `unix://${this.socketPath}`;
  }

  async start(): Promise<void> {
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
    const server = createServer((req, res) => void this.#forward(req, res));
    server.on('connection', (socket: Socket) => {
      this.#open.add(socket);
      socket.on('close', () => this.#open.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(this.socketPath, resolve));
    this.#server = server;
  }

  /** The engine goes away: nothing listens on the socket and every connection through it is cut. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const open of [...this.#open]) open.destroy();
    await closed;
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://engine');
    const [key, value] = this.#label;
    const scoped = /\/(containers\/json|volumes|events)$/.test(url.pathname) && req.method === 'GET';
    if (scoped) {
      const filters = JSON.parse(url.searchParams.get('filters') ?? '{}') as Record<string, unknown>;
      const labels = Array.isArray(filters.label) ? (filters.label as string[]) : [];
      filters.label = [...labels.map(hide), `${key}=${value}`];
      url.searchParams.set('filters', JSON.stringify(filters));
    }
    let body: Buffer | undefined;
    if (req.method === 'POST' && /\/(containers|volumes)\/create$/.test(url.pathname)) {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const spec = JSON.parse(Buffer.concat(chunks).toString() || '{}') as {
        Labels?: Record<string, string>;
      };
      spec.Labels = { ...spec.Labels, [key]: value };
      body = Buffer.from(hide(JSON.stringify(spec)));
    }
    const headers = { ...req.headers };
    if (body) {
      headers['content-length'] = String(body.length);
      delete headers['transfer-encoding'];
    }
    const upstream = request(
      { socketPath: ENGINE_SOCKET, method: req.method, path: url.pathname + url.search, headers },
      (answer) => {
        const rewrite = /\/(containers\/json|containers\/[^/]+\/json|events)$/.test(url.pathname);
        if (!rewrite) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        const headers = { ...answer.headers };
        delete headers['content-length'];
        res.writeHead(answer.statusCode ?? 502, headers);
        // Events come one JSON line per chunk; listings and inspections are small.
        answer.on('data', (chunk: Buffer) => res.write(reveal(chunk.toString('utf8'))));
        answer.on('end', () => res.end());
        answer.on('error', () => res.destroy());
      },
    );
    this.#open.add(upstream);
    upstream.on('close', () => this.#open.delete(upstream));
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    if (body) upstream.end(body);
    else req.pipe(upstream);
  }
}
