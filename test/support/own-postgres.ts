/**
 * A PostgreSQL server of a test's own, so that it can be stopped, restarted and started again without touching
 * the machine's cluster (other suites use that one): `initdb` in a temporary directory, `pg_ctl` on a free port,
 * trust authentication on 127.0.0.1 only, or also on one more address for clients of one network (a cluster's pods). Run as the `postgres` user when the test runs as root (PostgreSQL
 * refuses root). `destroy` stops it and removes its directory.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** Where Debian's PostgreSQL 15 (scripts/provision.sh) keeps initdb and pg_ctl. */
const BIN = '/usr/lib/postgresql/15/bin';

export function ownPostgresAvailable(): boolean {
  return existsSync(join(BIN, 'initdb')) && existsSync(join(BIN, 'pg_ctl'));
}

/** A TCP port free on 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

/** One more address to listen on, trusting clients of one network (CIDR): a cluster's pods reaching the host. */
export interface PostgresReach {
  address: string;
  clients: string;
}

export class OwnPostgres {
  readonly #dir: string;
  readonly #port: number;
  readonly #reach: PostgresReach | undefined;

  private constructor(dir: string, port: number, reach: PostgresReach | undefined) {
    this.#dir = dir;
    this.#port = port;
    this.#reach = reach;
  }

  /** Makes and starts a fresh server. */
  static async create(reach?: PostgresReach): Promise<OwnPostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'corral-pg-'));
    chmodSync(dir, 0o755);
    const server = new OwnPostgres(dir, await freePort(), reach);
    if (userInfo().uid === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(dir, uid, gid);
    }
    server.#run('initdb', ['-D', server.#data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    if (reach) appendFileSync(join(server.#data, 'pg_hba.conf'), `host all all ${reach.clients} trust\n`);
    await server.start();
    return server;
  }

  /** postgres://… of its `postgres` database. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.#port}/postgres`;
  }

  /** The same database at the extra address it listens on (`create`'s reach), as that network's clients call it. */
  get reachUrl(): string | undefined {
    return this.#reach && `postgres://postgres@${this.#reach.address}:${this.#port}/postgres`;
  }

  get #data(): string {
    return join(this.#dir, 'data');
  }

  async start(): Promise<void> {
    this.#run('pg_ctl', [
      '-D',
      this.#data,
      '-l',
      join(this.#dir, 'log'),
      '-w',
      '-t',
      '60',
      '-o',
      `-p ${this.#port} -k ${this.#dir} -c listen_addresses=${['127.0.0.1', ...(this.#reach ? [this.#reach.address] : [])].join(',')} -c fsync=off -c max_connections=100`,
      'start',
    ]);
  }

  /** A fast shutdown: sessions are ended (57P01), as in a restart. */
  async stop(): Promise<void> {
    this.#run('pg_ctl', ['-D', this.#data, '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  /** `pg_ctl restart` with a fast shutdown: what an upgrade or a configuration change does. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async destroy(): Promise<void> {
    try {
      this.#run('pg_ctl', ['-D', this.#data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Not running.
    }
    rmSync(this.#dir, { recursive: true, force: true });
  }

  #run(command: string, args: string[]): void {
    const path = join(BIN, command);
    const [file, argv] =
      userInfo().uid === 0 ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
    execFileSync(file, argv, { stdio: 'pipe', cwd: this.#dir });
  }
}
