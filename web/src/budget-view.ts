/**
 * The dashboard's budget banner (pure, tested): from `GET quota`'s budget, nothing below 80 % of it, a warning from
 * 80 % and an alert at 100 %, each with the server's own sentence (which budget, the share used, when it resets).
 */
import type { WireQuotaReport } from '../../src/client/index.js';

export interface BudgetBanner {
  kind: 'warning' | 'exceeded';
  /** The banner's first words. */
  title: string;
  /** The server's sentence: the budget, its use and limit, and its reset time. */
  message: string;
  resetsAt: string;
}

export function budgetBanner(report: Pick<WireQuotaReport, 'budget'> | undefined): BudgetBanner | undefined {
  const budget = report?.budget;
  if (budget === undefined || budget.state === 'ok') return undefined;
  const percent = budget.limit === 0 ? 100 : Math.floor((budget.used / budget.limit) * 100);
  return {
    kind: budget.state,
    title:
      budget.state === 'exceeded'
        ? 'Budget spent: no new worker starts beyond minNum.'
        : `Budget ${percent} % used.`,
    message: budget.message,
    resetsAt: budget.resetsAt,
  };
}
