/**
 * One job's detail read for its owner (the dashboard): its listing's fields, the first characters of its input and
 * output with their full sizes, and the stream chunks no client has read yet, peeked without consuming them. The
 * cutting happens in SQL, so a 20 MB input is never read whole.
 */
import { type Expression, type Kysely, type RawBuilder, sql } from 'kysely';
import type { ClippedText, JobDetail, JobDetailBounds } from '../../domain/job-detail.js';
import type { Database, DialectName } from '../schema.js';
import { LISTING_COLUMNS, listingFromRow } from './job-reads.js';

/** The job, if it is this endpoint's; undefined otherwise (another endpoint's job is not found). */
export async function readJobDetail(
  db: Kysely<Database>,
  dialect: DialectName,
  endpointId: string,
  jobId: string,
  bounds: JobDetailBounds,
): Promise<JobDetail | undefined> {
  const input = sql.ref('input');
  const output = sql.ref('output');
  const row = await db
    .selectFrom('jobs')
    .select(LISTING_COLUMNS)
    .select([
      head(input, bounds.maxChars).as('input_head'),
      sql<number>`length(input)`.as('input_chars'),
      byteLength(dialect, input).as('input_bytes'),
      head(output, bounds.maxChars).as('output_head'),
      sql<number | null>`length(output)`.as('output_chars'),
      byteLength(dialect, output).as('output_bytes'),
    ])
    .where('id', '=', jobId)
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirst();
  if (!row) return undefined;
  const chunk = sql.ref('chunk');
  const [chunks, total] = await Promise.all([
    db
      .selectFrom('job_chunks')
      .select([
        head(chunk, bounds.maxChunkChars).as('head'),
        sql<number>`length(chunk)`.as('chars'),
        byteLength(dialect, chunk).as('bytes'),
      ])
      .where('job_id', '=', jobId)
      .orderBy('seq')
      .limit(bounds.maxChunks)
      .execute(),
    db
      .selectFrom('job_chunks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('job_id', '=', jobId)
      .executeTakeFirstOrThrow(),
  ]);
  return {
    ...listingFromRow(row),
    input: clipped(row.input_head ?? '', row.input_chars, row.input_bytes, bounds.maxChars),
    output:
      row.output_head === null
        ? null
        : clipped(row.output_head, row.output_chars ?? 0, row.output_bytes ?? 0, bounds.maxChars),
    chunks: chunks.map((c) => clipped(c.head ?? '', c.chars, c.bytes, bounds.maxChunkChars)),
    chunkCount: Number(total.n),
  };
}

/** The first `chars` characters of a text column (null stays null). */
function head(column: Expression<unknown>, chars: number): RawBuilder<string | null> {
  return sql<string | null>`substr(${column}, 1, cast(${chars} as integer))`;
}

/** A text column's size in bytes: PostgreSQL counts them itself; SQLite counts a text's characters, its blob's bytes. */
function byteLength(dialect: DialectName, column: Expression<unknown>): RawBuilder<number> {
  return dialect === 'postgres'
    ? sql<number>`octet_length(${column})`
    : sql<number>`length(cast(${column} as blob))`;
}

function clipped(text: string, chars: number, bytes: number, maxChars: number): ClippedText {
  return { text, bytes: Number(bytes), truncated: Number(chars) > maxChars };
}
