/**
 * Migration 0019: each endpoint's OpenAI model name (`openaiModel`, issue 35) as a column, written with its spec,
 * null when it has none, and a unique index of the live endpoints by owner and model name: the model router finds
 * an owner's endpoints by model in one indexed read, and two live endpoints of one owner never share a model name
 * (a create or update that would is refused: OPENAI_MODEL_TAKEN). No stored spec has the field yet: nothing to fill.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('endpoints').addColumn('openai_model', 'text').execute();
  await db.schema
    .createIndex('endpoints_openai_model_live')
    .on('endpoints')
    .columns(['owner_id', 'openai_model'])
    .unique()
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
}
