/**
 * The budget banner above every page: `GET quota` read now and again, and from 80 % of the owner's budget a warning
 * (at 100 % an alert) naming the budget, the share used and when it resets (budget-view.ts). Nothing below 80 %,
 * nothing where the server has no budgets, and nothing where the quota cannot be read (the pages say their own
 * errors).
 */
import { useApi } from '../api-context.js';
import { budgetBanner } from '../budget-view.js';
import { usePoll } from '../poll.js';

/** A budget binds within about 5 s of being spent (docs/budgets.md): read it about as often as the lists. */
const POLL_MS = 15_000;

export function BudgetBanner() {
  const api = useApi();
  const quota = usePoll(() => api.call((c) => c.getQuota()), POLL_MS, []);
  const banner = budgetBanner(quota.data);
  if (banner === undefined) return null;
  return (
    <div
      class={`budget-banner budget-${banner.kind}`}
      role={banner.kind === 'exceeded' ? 'alert' : 'status'}
      data-testid="budget-banner"
      data-state={banner.kind}
    >
      <strong>{banner.title}</strong> <span>{banner.message}</span>{' '}
      <span class="muted">({new Date(banner.resetsAt).toLocaleString()} in your time zone)</span>
    </div>
  );
}
