/**
 * The Models page's view (pure, tested): each cached model's row (its machine, sizes, commit, last use), a download's
 * progress
 * in the words of the worker's `downloading` message (domain/transfer-text.ts, through the client), how often to
 * read again (while a download runs, never otherwise), the Pull form's request body, and beside which field an
 * API error is shown.
 */
import {
  decimalSize,
  timeLeft,
  type WireCachedModel,
  type WireModelPull,
  type WireModels,
} from '../../src/client/index.js';
import { age } from './endpoint-view.js';

/** How often the page reads `GET models` while a download runs. */
export const DOWNLOAD_POLL_MS = 1000;

export interface DownloadView {
  /** 0 to 100, whole. */
  percent: number;
  /** `3.2 GB of 14.9 GB`. */
  bytes: string;
  /** `410 MB/s`; `-` before a rate is known. */
  rate: string;
  /** `about 29 s left`; empty before a rate is known. */
  left: string;
}

export interface ModelRow {
  /** `org/name@revision`, and ` on {node}` for a GPU node's copy: unique in a listing. */
  key: string;
  /** The GPU node whose cache holds it (Kubernetes with node agents); null: the server's own cache. */
  machine: string | null;
  name: string;
  revision: string;
  /** The commit's first 12 characters, as the hub's pages show it. */
  commitShort: string;
  files: number;
  size: string;
  disk: string;
  /** `3 min ago`. */
  lastUse: string;
  endpoints: WireCachedModel['endpoints'];
  download: DownloadView | null;
}

export function downloadView(download: NonNullable<WireCachedModel['download']>): DownloadView {
  const { bytesDone, bytesTotal, bytesPerSecond } = download;
  const percent = bytesTotal <= 0 ? 0 : Math.min(100, Math.floor((bytesDone / bytesTotal) * 100));
  const known = bytesPerSecond >= 1;
  return {
    percent,
    bytes: `${decimalSize(bytesDone)} of ${decimalSize(bytesTotal)}`,
    rate: known ? `${decimalSize(bytesPerSecond)}/s` : '-',
    left: known ? `about ${timeLeft(Math.max(0, bytesTotal - bytesDone) / bytesPerSecond)} left` : '',
  };
}

export function modelRows(models: readonly WireCachedModel[], nowMs: number): ModelRow[] {
  return models.map((m) => ({
    key: `${m.name}@${m.revision}${m.machine ? ` on ${m.machine}` : ''}`,
    // A server older than the machine field answers none: its own cache.
    machine: m.machine ?? null,
    name: m.name,
    revision: m.revision,
    commitShort: m.commit.slice(0, 12),
    files: m.files,
    size: decimalSize(m.bytes),
    disk: decimalSize(m.diskBytes),
    lastUse: `${age(Date.parse(m.lastUsedAt), nowMs)} ago`,
    endpoints: m.endpoints,
    download: m.download === null ? null : downloadView(m.download),
  }));
}

/** Whether the table has a Machine column: where a GPU node's cache is listed (Kubernetes with node agents). */
export function showsMachines(rows: readonly ModelRow[]): boolean {
  return rows.some((row) => row.machine !== null);
}

/** The next read's delay: every second while a model downloads; none (the page stops reading) otherwise. */
export function nextReadMs(listing: WireModels | undefined): number | null {
  return listing?.models.some((m) => m.download !== null) ? DOWNLOAD_POLL_MS : null;
}

/** What the page says above its table: whose models these are. */
export function scopeLine(scope: WireModels['scope']): string {
  return scope === 'all'
    ? 'An admin key: every model in the cache, with every owner’s endpoints that name it.'
    : 'The models your endpoints name or you pulled; which models other owners cache is not shown.';
}

export interface PullForm {
  name: string;
  revision: string;
  /** Globs separated by commas, spaces or lines. */
  allowPatterns: string;
  /** A secret's name; empty for none. */
  tokenSecret: string;
}

export const EMPTY_PULL_FORM: PullForm = { name: '', revision: 'main', allowPatterns: '', tokenSecret: '' };

/** `POST models`' body: trimmed, `main` for an empty revision, the patterns split, no token secret when none. */
export function pullBody(form: PullForm): WireModelPull {
  const tokenSecret = form.tokenSecret.trim();
  return {
    name: form.name.trim(),
    revision: form.revision.trim() === '' ? 'main' : form.revision.trim(),
    allowPatterns: form.allowPatterns.split(/[\s,]+/).filter((p) => p !== ''),
    ...(tokenSecret === '' ? {} : { tokenSecret }),
  };
}

export type PullField = keyof PullForm;
const PULL_FIELDS: readonly PullField[] = ['name', 'revision', 'allowPatterns', 'tokenSecret'];

/** Where a refusal goes: where the token is the cause. */
const FIELD_BY_REASON: Record<string, PullField> = {
  UNKNOWN_SECRET: 'tokenSecret',
  MODEL_GATED: 'tokenSecret',
  MODEL_UNAUTHORIZED: 'tokenSecret',
  MODEL_NOT_FOUND: 'name',
};

/**
 * The Pull form's field an API error is shown beside: the one its `metadata.field` names (`revision`,
 * `models.0.revision`, `allowPatterns.1`), else the one its reason points at; undefined: above the form.
 */
export function pullErrorField(error: { reason: string; field: string | undefined }): PullField | undefined {
  const named = error.field
    ?.split('.')
    .find((part): part is PullField => PULL_FIELDS.includes(part as PullField));
  return named ?? FIELD_BY_REASON[error.reason];
}
