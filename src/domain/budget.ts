/**
 * Budgets (issue 32): an owner's monthly limit in money or GPU-hours, and the operator's account-wide spend per
 * hour; which applies to an owner, and the rule that reads what was used against them: ok, a warning at 80 %,
 * exceeded at 100 %, with the time the limit resets. Pure: the use comes from the usage ledger, the limits from
 * the config file, the time from the caller.
 */

/** An owner's monthly limits; either or both (the nearer one decides). */
export interface Budget {
  /** In the ledger's currency, per calendar month (UTC). */
  perMonth?: number;
  /** GPU-hours (a worker's hours times its GPUs, while it holds them), per calendar month (UTC). */
  gpuHoursPerMonth?: number;
}

/** The configured budgets: the one for every owner, by owner id instead of it, and the account-wide rate. */
export interface BudgetSettings {
  /** Every owner's but the operator's (as the default GPU quotas, they keep tenants apart, not the operator). */
  defaults?: Budget;
  owners: Readonly<Record<string, Budget>>;
  /** The most every owner together may spend in one clock hour (UTC), in the ledger's currency. */
  spendPerHour?: number;
}

/** Which limit a standing reads. */
export type BudgetName = 'perMonth' | 'gpuHoursPerMonth' | 'spendPerHour';

export type BudgetState = 'ok' | 'warning' | 'exceeded';

/** From this share of a limit on, the owner is warned. */
const BUDGET_WARNING_SHARE = 0.8;

/** What was used since a limit's period began: money in the ledger's currency, and GPU-hours. */
export interface BudgetUse {
  amount: number;
  gpuHours: number;
  currency: string;
}

/** One limit read against its use. */
export interface BudgetStanding {
  state: BudgetState;
  budget: BudgetName;
  limit: number;
  used: number;
  /** The currency, or `GPU-hours`. */
  unit: string;
  /** When the period ends and the use counts from 0 again, epoch milliseconds. */
  resetsAt: number;
}

/** The owner's budget: its own entry, else (not for the operator) the one for every owner. */
export function budgetFor(ownerId: string, settings: BudgetSettings, operator: boolean): Budget | undefined {
  if (Object.hasOwn(settings.owners, ownerId)) return settings.owners[ownerId];
  return operator ? undefined : settings.defaults;
}

/** The start of the calendar month (UTC) `now` is in. */
export function monthStart(now: number): number {
  const date = new Date(now);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/** The start of the next calendar month (UTC): when a monthly budget resets. */
export function nextMonthStart(now: number): number {
  const date = new Date(now);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

const HOUR_MS = 3_600_000;

/** The start of the clock hour (UTC) `now` is in: the spend rate's period. */
export function hourStart(now: number): number {
  return now - (now % HOUR_MS);
}

/** A monthly budget read against the month's use; the limit nearest its end, or undefined with none set. */
export function monthlyStanding(
  budget: Budget | undefined,
  use: BudgetUse,
  now: number,
): BudgetStanding | undefined {
  const resetsAt = nextMonthStart(now);
  const standings: BudgetStanding[] = [];
  if (budget?.perMonth !== undefined) {
    standings.push(standing('perMonth', budget.perMonth, use.amount, use.currency, resetsAt));
  }
  if (budget?.gpuHoursPerMonth !== undefined) {
    standings.push(
      standing('gpuHoursPerMonth', budget.gpuHoursPerMonth, use.gpuHours, 'GPU-hours', resetsAt),
    );
  }
  return worst(standings);
}

/** The account-wide spend of this clock hour read against its limit; undefined with none set. */
export function hourlyStanding(
  spendPerHour: number | undefined,
  amountThisHour: number,
  currency: string,
  now: number,
): BudgetStanding | undefined {
  if (spendPerHour === undefined) return undefined;
  return standing('spendPerHour', spendPerHour, amountThisHour, currency, hourStart(now) + HOUR_MS);
}

function standing(
  budget: BudgetName,
  limit: number,
  used: number,
  unit: string,
  resetsAt: number,
): BudgetStanding {
  const state = stateOf(limit, used);
  return { state, budget, limit, used, unit, resetsAt };
}

/** Exceeded at 100 % (a limit of 0 is exceeded at once), warning from 80 %. */
function stateOf(limit: number, used: number): BudgetState {
  if (used >= limit) return 'exceeded';
  return used >= limit * BUDGET_WARNING_SHARE ? 'warning' : 'ok';
}

const RANK: Record<BudgetState, number> = { ok: 0, warning: 1, exceeded: 2 };

/** The standing that binds: the worst state, then the larger share of its limit, then the later reset. */
export function worst(standings: readonly (BudgetStanding | undefined)[]): BudgetStanding | undefined {
  let found: BudgetStanding | undefined;
  for (const s of standings) {
    if (s === undefined) continue;
    if (
      !found ||
      RANK[s.state] > RANK[found.state] ||
      (RANK[s.state] === RANK[found.state] && share(s) > share(found)) ||
      (RANK[s.state] === RANK[found.state] && share(s) === share(found) && s.resetsAt > found.resetsAt)
    ) {
      found = s;
    }
  }
  return found;
}

function share(s: BudgetStanding): number {
  return s.limit === 0 ? Number.POSITIVE_INFINITY : s.used / s.limit;
}

const BUDGET_LABELS: Record<BudgetName, string> = {
  perMonth: 'monthly budget (quotas budget.perMonth)',
  gpuHoursPerMonth: 'monthly GPU-hour budget (quotas budget.gpuHoursPerMonth)',
  spendPerHour: 'account-wide spend limit per hour (quotas spendPerHour)',
};

/** "2.5" for money and GPU-hours alike: at most 4 decimals, none trailing. */
function amountText(value: number): string {
  return String(Math.round(value * 10_000) / 10_000);
}

/**
 * The sentence that says why no new worker starts (or that the owner nears it): which budget, its use and limit,
 * and when it resets. Starts with BUDGET_EXCEEDED when exceeded, so that a message alone names its code.
 */
export function describeStanding(s: BudgetStanding): string {
  const use = `${amountText(s.used)} of ${amountText(s.limit)} ${s.unit} used`;
  const resets = `resets at ${new Date(s.resetsAt).toISOString()}`;
  if (s.state === 'exceeded') {
    return `BUDGET_EXCEEDED: the ${BUDGET_LABELS[s.budget]} is spent (${use}): no new worker starts beyond minNum until it ${resets}; running workers go on`;
  }
  const percent = s.limit === 0 ? 100 : Math.floor((s.used / s.limit) * 100);
  return `the ${BUDGET_LABELS[s.budget]} is ${percent} % used (${use}); it ${resets}`;
}
