/**
 * Budgets in use: each owner's monthly budget and the account-wide spend per hour read against the usage ledger
 * (domain/budget.ts decides), cached per owner for a few seconds so that the controller's passes, the gateway's
 * answers and the jobs' statuses ask the ledger at most once per owner per `freshMs`, never once per request.
 */
import {
  type BudgetSettings,
  type BudgetStanding,
  type BudgetUse,
  budgetFor,
  hourlyStanding,
  hourStart,
  monthlyStanding,
  monthStart,
  worst,
} from '../domain/budget.js';
import type { BudgetStandings } from '../ports/budgets.js';
import type { Clock } from '../ports/clock.js';
import type { UsageReader, UsageState, UsageTotals } from '../ports/usage.js';

/** How long a read stands for: long enough to spare the ledger, short enough that a budget binds within seconds. */
export const DEFAULT_BUDGET_FRESH_MS = 5_000;

/** The states in which a worker holds its GPUs: what a GPU-hour budget counts (suspended and downloading hold none). */
const GPU_HOLDING_STATES: readonly UsageState[] = ['starting', 'active', 'idle', 'frozen'];

/** The key of the account-wide spend in the cache: no owner id is empty. */
const ACCOUNT = '';

export interface BudgetServiceOptions {
  usage: UsageReader;
  settings: BudgetSettings;
  clock: Clock;
  /** Whether the owner holds an admin key: the budget for every owner does not apply to the operator. */
  isOperator: (ownerId: string) => Promise<boolean>;
  freshMs?: number;
  /** A read that failed (the store, say): the last standing stays until a read succeeds. */
  onReadError?: (error: unknown, ownerId: string) => void;
}

interface Cached {
  standing: BudgetStanding | undefined;
  /** Amount spent this hour by every owner (the account's entry only). */
  amount?: number;
  currency?: string;
  readAt: number;
  reading?: Promise<void>;
}

export class BudgetService implements BudgetStandings {
  readonly #o: BudgetServiceOptions;
  readonly #freshMs: number;
  readonly #cache = new Map<string, Cached>();
  readonly #listeners = new Set<(ownerId: string) => void>();
  /** Whether any budget is configured at all: without one, nothing is ever read. Settled by the settings. */
  readonly configured: boolean;

  constructor(options: BudgetServiceOptions) {
    this.#o = options;
    this.#freshMs = options.freshMs ?? DEFAULT_BUDGET_FRESH_MS;
    const { settings } = options;
    this.configured =
      settings.defaults !== undefined ||
      Object.keys(settings.owners).length > 0 ||
      settings.spendPerHour !== undefined;
  }

  standingOf(ownerId: string): BudgetStanding | undefined {
    if (!this.configured) return undefined;
    const cached = this.#cache.get(ownerId);
    if (!cached || this.#stale(cached)) void this.#refresh(ownerId);
    return cached?.standing;
  }

  async read(ownerId: string): Promise<BudgetStanding | undefined> {
    if (!this.configured) return undefined;
    const cached = this.#cache.get(ownerId);
    if (!cached || this.#stale(cached)) await this.#refresh(ownerId);
    return this.#cache.get(ownerId)?.standing;
  }

  onChange(listener: (ownerId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #stale(cached: Cached): boolean {
    return this.#o.clock() - cached.readAt >= this.#freshMs;
  }

  /** One read at a time per owner: callers during a read wait for it. */
  #refresh(ownerId: string): Promise<void> {
    const cached = this.#cache.get(ownerId);
    if (cached?.reading) return cached.reading;
    const reading = this.#readStanding(ownerId).then(
      (standing) => {
        const before = this.#cache.get(ownerId)?.standing;
        this.#cache.set(ownerId, { standing, readAt: this.#o.clock() });
        if (before?.state !== standing?.state) for (const listener of this.#listeners) listener(ownerId);
      },
      (error: unknown) => {
        this.#o.onReadError?.(error, ownerId);
        const entry = this.#cache.get(ownerId);
        if (entry) delete entry.reading;
      },
    );
    this.#cache.set(ownerId, { ...(cached ?? { standing: undefined, readAt: -Infinity }), reading });
    return reading;
  }

  async #readStanding(ownerId: string): Promise<BudgetStanding | undefined> {
    const { usage, settings, clock, isOperator } = this.#o;
    const now = clock();
    const budget = budgetFor(ownerId, settings, await isOperator(ownerId));
    const hourly = this.#hourly(now);
    if (budget === undefined) return (await hourly)?.standing;
    const [totals, account] = await Promise.all([usage.totals({ ownerId }, monthStart(now), now), hourly]);
    return worst([monthlyStanding(budget, budgetUse(totals), now), account?.standing]);
  }

  /** The account's spend this clock hour, read at most once per `freshMs` for every owner together. */
  async #hourly(now: number): Promise<Cached | undefined> {
    const { spendPerHour } = this.#o.settings;
    if (spendPerHour === undefined) return undefined;
    const cached = this.#cache.get(ACCOUNT);
    if (cached && !this.#stale(cached) && hourStart(cached.readAt) === hourStart(now)) return cached;
    const rows = await this.#o.usage.query({
      from: hourStart(now),
      to: now,
      bucket: 'hour',
      grouping: 'owner',
    });
    const amount = rows.reduce((sum, row) => sum + row.amount, 0);
    const currency = rows[0]?.currency ?? '';
    const entry: Cached = {
      standing: hourlyStanding(spendPerHour, amount, currency, now),
      amount,
      currency,
      readAt: now,
    };
    this.#cache.set(ACCOUNT, entry);
    return entry;
  }
}

/** What a budget reads of the ledger's totals: the money, and the GPU-hours of the states that hold GPUs. */
function budgetUse(totals: UsageTotals): BudgetUse {
  const gpuSeconds = GPU_HOLDING_STATES.reduce((sum, state) => sum + totals.gpuSeconds[state], 0);
  return { amount: totals.amount, gpuHours: gpuSeconds / 3600, currency: totals.currency };
}
