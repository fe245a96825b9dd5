/**
 * The dashboard's static files (built into dist/web by web/build.ts), read into memory once and served at `/ui/`
 * with `/` sent there: no key needed for the files themselves (the page asks for one), an ETag for revalidation, a
 * gzipped copy for clients that take one, and a Content-Security-Policy that allows only this origin.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors/api-catalogue.js';

export interface StaticFile {
  body: Buffer;
  gzipped: Buffer;
  contentType: string;
  etag: string;
}

/** File name (no folders) -> its contents. */
export type DashboardFiles = ReadonlyMap<string, StaticFile>;

/** Where the pages live under the server root. */
export const DASHBOARD_PATH = '/ui/';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
};

/** Scripts, styles, images and API calls from this origin only; no framing. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** The files of a built dashboard folder, or undefined when it was not built (no index.html there). */
export function loadDashboard(dir: string): DashboardFiles | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  if (!names.includes('index.html')) return undefined;
  const files = new Map<string, StaticFile>();
  for (const name of names) {
    const type = TYPES[extname(name)];
    if (type === undefined) continue;
    const body = readFileSync(join(dir, name));
    files.set(name, {
      body,
      gzipped: gzipSync(body, { level: 9 }),
      contentType: type,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    });
  }
  return files;
}

/** `GET /` (to `/ui/`), `GET /ui/` (index.html) and `GET /ui/:file`; without files, 404s that say how to build them. */
export function registerDashboard(app: FastifyInstance, files: DashboardFiles | undefined): void {
  app.get('/', async (_request, reply) => reply.redirect(DASHBOARD_PATH, 302));
  app.get('/ui', async (_request, reply) => reply.redirect(DASHBOARD_PATH, 301));
  app.get('/ui/', async (request, reply) => send(request, reply, files, 'index.html'));
  app.get<{ Params: { file: string } }>('/ui/:file', async (request, reply) =>
    send(request, reply, files, request.params.file),
  );
}

function send(
  request: FastifyRequest,
  reply: FastifyReply,
  files: DashboardFiles | undefined,
  name: string,
): FastifyReply {
  if (files === undefined) {
    throw new ApiError('ROUTE_NOT_FOUND', 'the dashboard is not built here: run `npm run build`');
  }
  const file = files.get(name);
  if (file === undefined) throw new ApiError('ROUTE_NOT_FOUND', `the dashboard has no file ${name}`);
  reply
    .header('content-type', file.contentType)
    .header('etag', file.etag)
    // Names are not hashed: the browser asks again each time and gets a 304 while nothing changed.
    .header('cache-control', 'no-cache')
    .header('vary', 'accept-encoding')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('referrer-policy', 'no-referrer');
  if (request.headers['if-none-match'] === file.etag) return reply.status(304).send();
  const acceptsGzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
  if (acceptsGzip) return reply.header('content-encoding', 'gzip').send(file.gzipped);
  return reply.send(file.body);
}
