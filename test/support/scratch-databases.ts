/**
 * PostgreSQL databases of a test's (or a bench's) own, on the server of a base URL (CORRAL_TEST_DATABASE_URL):
 * each `create` makes a fresh one and returns its URL; `dropAll` drops every one made, whatever connections
 * processes still hold to it, and closes the admin connection. Replicas started on one share only what they wrote.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export class ScratchDatabases {
  readonly #admin: pg.Client;
  readonly #baseUrl: string;
  readonly #names: string[] = [];

  private constructor(admin: pg.Client, baseUrl: string) {
    this.#admin = admin;
    this.#baseUrl = baseUrl;
  }

  /** Connects to the base URL's server as the user it names, which must be allowed to create databases. */
  static async connect(baseUrl: string): Promise<ScratchDatabases> {
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    return new ScratchDatabases(admin, baseUrl);
  }

  /** A new empty database named `prefix_` and random hex; its URL (the base URL's, another database). */
  async create(prefix: string): Promise<string> {
    const name = `${prefix}_${randomBytes(4).toString('hex')}`;
    await this.#admin.query(`create database ${name}`);
    this.#names.push(name);
    const url = new URL(this.#baseUrl);
    url.pathname = `/${name}`;
    return url.toString();
  }

  async dropAll(): Promise<void> {
    for (const name of this.#names.splice(0))
      await this.#admin.query(`drop database if exists ${name} with (force)`);
    await this.#admin.end();
  }
}
