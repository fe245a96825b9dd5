/**
 * The `endpoints` and `endpoint_counts` tables: endpoints by owner, id and appName, paged lists, and changes
 * written under a version check, with their events and audit entry in the same transaction.
 */
import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type {
  DesiredRun,
  Endpoint,
  EndpointSpec,
  EndpointState,
  StateReport,
} from '../../domain/endpoint.js';
import type { EndpointUse } from '../../domain/quota.js';
import type { NewEvent, Page } from '../../domain/records.js';
import { secretReferences } from '../../domain/secret-refs.js';
import { type AuditEntry, insertAudit } from '../audit.js';
import type { DatabaseConnection } from '../connection.js';
import { StoreError } from '../errors.js';
import { countLive } from '../owner-turn.js';
import type { Database, EndpointsTable } from '../schema.js';
import { insertEvents } from './events.js';

/** The result of a change to an endpoint: its next form and what to record about it. */
export interface EndpointChange {
  next: Endpoint;
  events: NewEvent[];
  deleted?: boolean;
  /**
   * Checks the owner's quota use (its live endpoints as they are before this change) inside the write's
   * transaction, after the owner's row is locked: throwing refuses the change and nothing is written.
   */
  admit?: (use: EndpointUse) => void;
  /** Nothing to write (no version, event or audit entry): the endpoint as read is the answer. */
  unchanged?: boolean;
}

/** Whose endpoints a look-up may find: one endpoint's (an invoke key), one owner's, or, with neither, everyone's. */
export interface EndpointReach {
  ownerId?: string;
  endpointId?: string;
}

/** Checks an owner's quota use before a create is written; throwing refuses it. */
export type Admit = (use: EndpointUse) => void;

const MAX_ATTEMPTS = 5;
const GET_MANY_CHUNK = 500;

export interface EndpointVersion {
  id: string;
  version: number;
}

export interface VersionedEndpoint {
  version: number;
  endpoint: Endpoint;
}

/**
 * The ids of one page of an owner's live endpoints, newest first, as a subquery: the page's rows, and the workers
 * of those endpoints (`WorkerRepository.listForEndpointPage`), are read with it in parallel instead of in turn.
 */
export function endpointPageIds(db: Kysely<Database>, ownerId: string, page: Page) {
  return db
    .selectFrom('endpoints')
    .where('deleted_at', 'is', null)
    .select('id')
    .where('owner_id', '=', ownerId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset);
}

export class EndpointRepository {
  readonly #connection: DatabaseConnection;

  constructor(options: { connection: DatabaseConnection }) {
    this.#connection = options.connection;
  }

  /**
   * Inserts a new endpoint with its first events; throws StoreError APP_NAME_TAKEN when the appName is used
   * (OPENAI_MODEL_TAKEN when another of the owner's live endpoints has its openaiModel). `admit`
   * sees the owner's use without the new endpoint and may refuse it by throwing.
   */
  async create(endpoint: Endpoint, events: NewEvent[], audit: AuditEntry, admit?: Admit): Promise<void> {
    try {
      await this.#connection.db.transaction().execute(async (trx) => {
        await countLive(trx, endpoint.ownerId, 1);
        if (admit) admit(await this.#use(trx, endpoint.ownerId));
        await trx.insertInto('endpoints').values(toRow(endpoint, 1)).execute();
        await insertEvents(trx, endpoint.id, events);
        await insertAudit(trx, audit);
      });
    } catch (error) {
      throw this.#translate(error, endpoint.spec);
    }
  }

  async get(ownerId: string, id: string): Promise<Endpoint | undefined> {
    const row = await this.#live(this.#connection.db)
      .selectAll()
      .where('owner_id', '=', ownerId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && fromRow(row);
  }

  async findByAppName(appName: string): Promise<Endpoint | undefined> {
    const row = await this.#live(this.#connection.db)
      .selectAll()
      .where('app_name', '=', appName)
      .executeTakeFirst();
    return row && fromRow(row);
  }

  /**
   * The live endpoints within `reach` whose id, appName or name is `ref`: the id's match first, then the appName's,
   * then the oldest named so, at most `limit`. One statement of three indexed reads (primary key, appName, name), so
   * that its cost does not grow with the installation: an OR of the three let SQLite scan the whole table.
   */
  async matching(ref: string, reach: EndpointReach, limit: number): Promise<Endpoint[]> {
    const db = this.#connection.db;
    const by = (column: 'id' | 'app_name' | 'name', rank: number) => {
      let query = this.#live(db)
        .selectAll()
        .select(sql<number>`${sql.lit(rank)}`.as('match_rank'))
        .where(column, '=', ref);
      if (reach.ownerId !== undefined) query = query.where('owner_id', '=', reach.ownerId);
      if (reach.endpointId !== undefined) query = query.where('id', '=', reach.endpointId);
      return query;
    };
    const rows = await by('id', 0)
      .unionAll(by('app_name', 1))
      .unionAll(by('name', 2))
      .orderBy('match_rank')
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    const seen = new Set<string>();
    return rows.filter((row) => !seen.has(row.id) && seen.add(row.id)).map(fromRow);
  }

  /**
   * The live endpoints within `reach` that have an OpenAI model name, by name, at most `limit`: the model router's
   * one read (the (owner_id, openai_model) index), whose choice is openai-model.ts's.
   */
  async withOpenAIModel(reach: EndpointReach, limit: number): Promise<Endpoint[]> {
    let query = this.#live(this.#connection.db).selectAll().where('openai_model', 'is not', null);
    if (reach.ownerId !== undefined) query = query.where('owner_id', '=', reach.ownerId);
    if (reach.endpointId !== undefined) query = query.where('id', '=', reach.endpointId);
    const rows = await query.orderBy('openai_model').orderBy('id').limit(limit).execute();
    return rows.map(fromRow);
  }

  /** Newest first; `total` counts all of the owner's live endpoints (from `endpoint_counts`). */
  async list(ownerId: string, page: Page): Promise<{ endpoints: Endpoint[]; total: number }> {
    const db = this.#connection.db;
    // A deferred join: the offset walks the (owner_id, created_at, id) index for ids only, and just the
    // page's rows are read in full. Reading whole rows to skip them made deep pages slow on PostgreSQL.
    const pageIds = endpointPageIds(db, ownerId, page);
    const [rows, count] = await Promise.all([
      db
        .selectFrom('endpoints')
        .innerJoin(pageIds.as('page'), 'page.id', 'endpoints.id')
        .selectAll('endpoints')
        .orderBy('endpoints.created_at', 'desc')
        .orderBy('endpoints.id', 'desc')
        .execute(),
      db.selectFrom('endpoint_counts').select('live').where('owner_id', '=', ownerId).executeTakeFirst(),
    ]);
    return { endpoints: rows.map(fromRow), total: Number(count?.live ?? 0) };
  }

  /**
   * The controller's report of an endpoint's state: writes only the state columns (bumping the version so
   * that a concurrent API update re-reads), with an event when it changed. No-op when unchanged or gone.
   */
  async reportStatus(id: string, status: StateReport<EndpointState>, event: NewEvent): Promise<boolean> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const row = await this.#live(this.#connection.db)
        .select(['version', 'state', 'state_error', 'state_message'])
        .where('id', '=', id)
        .executeTakeFirst();
      if (!row) return false;
      if (
        row.state === status.state &&
        row.state_error === status.error &&
        row.state_message === status.message
      ) {
        return false;
      }
      const written = await this.#connection.db.transaction().execute(async (trx) => {
        const updated = await trx
          .updateTable('endpoints')
          .set({
            state: status.state,
            state_error: status.error,
            state_message: status.message,
            version: row.version + 1,
          })
          .where('id', '=', id)
          .where('version', '=', row.version)
          .executeTakeFirst();
        if (Number(updated.numUpdatedRows) !== 1) return false;
        if (row.state !== status.state || row.state_error !== status.error)
          await insertEvents(trx, id, [event]);
        return true;
      });
      if (written) return true;
    }
    return false;
  }

  /** What the owner's live endpoints count toward its quotas (stopped ones included: start needs no quota). */
  use(ownerId: string): Promise<EndpointUse> {
    return this.#use(this.#connection.db, ownerId);
  }

  /** Summed over an index of the worker numbers each row keeps beside its spec (migration 0009): no spec is read. */
  async #use(db: Kysely<Database> | Transaction<Database>, ownerId: string): Promise<EndpointUse> {
    const row = await this.#live(db)
      .where('owner_id', '=', ownerId)
      .select([
        sql<number>`count(*)`.as('endpoints'),
        sql<number>`coalesce(sum(min_workers * gpus_per_worker), 0)`.as('minGpus'),
        sql<number>`coalesce(sum(max_workers * gpus_per_worker), 0)`.as('maxGpus'),
        sql<number>`coalesce(sum(max_workers), 0)`.as('workers'),
      ])
      .executeTakeFirst();
    return {
      endpoints: Number(row?.endpoints ?? 0),
      minGpus: Number(row?.minGpus ?? 0),
      maxGpus: Number(row?.maxGpus ?? 0),
      workers: Number(row?.workers ?? 0),
    };
  }

  /** Ids of the owner's live endpoints whose image pulls with these credentials. */
  async idsUsingCredentials(ownerId: string, authId: string): Promise<string[]> {
    const rows = await this.#live(this.#connection.db)
      .select(['id', 'spec'])
      .where('owner_id', '=', ownerId)
      .where('spec', 'like', `%${JSON.stringify(authId).slice(1, -1)}%`)
      .execute();
    return rows.filter((r) => (JSON.parse(r.spec) as EndpointSpec).image.authId === authId).map((r) => r.id);
  }

  /** The owner's live endpoints whose env values reference the secret (`{{ CORRAL_SECRET_name }}`) or whose models take it as their hub token. */
  async idsUsingSecret(ownerId: string, name: string): Promise<string[]> {
    const rows = await this.#live(this.#connection.db)
      .select(['id', 'spec'])
      .where('owner_id', '=', ownerId)
      .where((eb) =>
        eb.or([
          eb('spec', 'like', `%CORRAL_SECRET_${name}%`),
          eb('spec', 'like', `%"tokenSecret":"${name}"%`),
        ]),
      )
      .execute();
    const uses = (spec: Partial<EndpointSpec>) =>
      (spec.env ?? []).some((e) => secretReferences(e.value).includes(name)) ||
      (spec.models ?? []).some((m) => m.tokenSecret === name);
    return rows.filter((r) => uses(JSON.parse(r.spec) as Partial<EndpointSpec>)).map((r) => r.id);
  }

  /** Every live endpoint of every owner (the controller's view). */
  async listAll(): Promise<Endpoint[]> {
    const rows = await this.#live(this.#connection.db).selectAll().orderBy('created_at').execute();
    return rows.map(fromRow);
  }

  /** Every live endpoint's id and version, oldest first, from an index: what changed since a reader last looked. */
  async liveVersions(): Promise<EndpointVersion[]> {
    return this.#live(this.#connection.db)
      .select(['id', 'version'])
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /** The live endpoints among `ids` with the version each was read at, in no particular order. */
  async getMany(ids: readonly string[]): Promise<VersionedEndpoint[]> {
    const found: VersionedEndpoint[] = [];
    // In chunks: SQLite binds at most 32,766 parameters to a statement, and one huge IN list plans badly anyway.
    for (let at = 0; at < ids.length; at += GET_MANY_CHUNK) {
      const rows = await this.#live(this.#connection.db)
        .selectAll()
        .where('id', 'in', ids.slice(at, at + GET_MANY_CHUNK))
        .execute();
      for (const row of rows) found.push({ version: row.version, endpoint: fromRow(row) });
    }
    return found;
  }

  /**
   * Reads the endpoint, applies `change` and writes the result if nobody wrote in between (retrying on a
   * concurrent write). Returns undefined when the endpoint does not exist for this owner. Errors thrown by
   * `change` (a validation failure, say) propagate and nothing is written.
   */
  async mutate(
    ownerId: string,
    id: string,
    change: (current: Endpoint) => EndpointChange,
    audit: (result: EndpointChange) => AuditEntry,
  ): Promise<Endpoint | undefined> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const row = await this.#live(this.#connection.db)
        .selectAll()
        .where('owner_id', '=', ownerId)
        .where('id', '=', id)
        .executeTakeFirst();
      if (!row) return undefined;
      const result = change(fromRow(row));
      if (result.unchanged) return result.next;
      const written = await this.#write(row.version, result, audit(result));
      if (written) return result.next;
    }
    throw new StoreError('CONCURRENT_UPDATE', `endpoint ${id} kept changing while being updated; try again`);
  }

  async #write(version: number, result: EndpointChange, audit: AuditEntry): Promise<boolean> {
    const { next } = result;
    try {
      return await this.#connection.db.transaction().execute(async (trx) => {
        if (result.admit) {
          await countLive(trx, next.ownerId, 0);
          result.admit(await this.#use(trx, next.ownerId));
        }
        const row = toRow(next, version + 1);
        const updated = await trx
          .updateTable('endpoints')
          .set({ ...row, deleted_at: result.deleted ? next.updatedAt : null })
          .where('id', '=', next.id)
          .where('version', '=', version)
          .executeTakeFirst();
        if (Number(updated.numUpdatedRows) !== 1) return false;
        // Only live endpoints are mutated, so a deletion is always one live endpoint fewer.
        if (result.deleted) await countLive(trx, next.ownerId, -1);
        await insertEvents(trx, next.id, result.events);
        await insertAudit(trx, audit);
        return true;
      });
    } catch (error) {
      throw this.#translate(error, next.spec);
    }
  }

  #live(db: Kysely<Database> | Transaction<Database>) {
    return db.selectFrom('endpoints').where('deleted_at', 'is', null);
  }

  /** A unique index's refusal as the StoreError of its field: the model names' index names its column. */
  #translate(error: unknown, spec: EndpointSpec): unknown {
    if (!this.#connection.isUniqueViolation(error)) return error;
    // SQLite: "UNIQUE constraint failed: endpoints.owner_id, endpoints.openai_model"; PostgreSQL names the index.
    if (error instanceof Error && error.message.includes('openai_model'))
      return new StoreError(
        'OPENAI_MODEL_TAKEN',
        `another of your endpoints already has the openaiModel "${spec.openaiModel ?? ''}": each model name picks one endpoint`,
      );
    return new StoreError('APP_NAME_TAKEN', `appName "${spec.appName}" is already taken`);
  }
}

function toRow(endpoint: Endpoint, version: number): EndpointsTable {
  return {
    id: endpoint.id,
    owner_id: endpoint.ownerId,
    app_name: endpoint.spec.appName,
    spec: JSON.stringify(endpoint.spec),
    revision: endpoint.revision,
    desired: endpoint.desired,
    state: endpoint.status.state,
    state_error: endpoint.status.error,
    state_message: endpoint.status.message,
    version,
    created_at: endpoint.createdAt,
    updated_at: endpoint.updatedAt,
    deleted_at: null,
    min_workers: endpoint.spec.workers.minWorkers,
    max_workers: endpoint.spec.workers.maxWorkers,
    gpus_per_worker: endpoint.spec.workers.gpusPerWorker,
    name: endpoint.spec.name,
    openai_model: endpoint.spec.openaiModel ?? null,
  };
}

/** What a spec stored before these fields existed had: not public, an `http` endpoint, jobs at the default path. */
const EARLIER_SPEC: Pick<EndpointSpec, 'public' | 'type' | 'jobsPath' | 'models'> = {
  public: false,
  type: 'http',
  jobsPath: '/run',
  models: [],
};

/** A spec stored before the idle tiers existed has none: 0, today's behaviour. */
const NO_IDLE_TIERS = { keepFrozenSeconds: 0, keepSuspendedSeconds: 0 };

function fromRow(row: Selectable<EndpointsTable>): Endpoint {
  const stored = JSON.parse(row.spec) as EndpointSpec;
  return {
    id: row.id,
    ownerId: row.owner_id,
    // A spec stored before `public`, `type`, `jobsPath` or `models` existed has none: their defaults.
    spec: { ...EARLIER_SPEC, ...stored, workers: { ...NO_IDLE_TIERS, ...stored.workers } },
    revision: row.revision,
    desired: row.desired as DesiredRun,
    status: { state: row.state as EndpointState, error: row.state_error, message: row.state_message },
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
