/**
 * Owners' budgets as the roles read them (issue 32): the controller (no new worker beyond minNum once exceeded), the
 * gateway's and the jobs' answers (why a request or a job waits) and `GET quota`. Implemented by
 * `service/budget-service.ts` over the usage ledger, cached per owner so that no request costs a store query.
 */
import type { BudgetStanding } from '../domain/budget.js';

export interface BudgetStandings {
  /**
   * The owner's binding standing as last read, without waiting; a stale one starts a fresh read (whose change is
   * told to `onChange`). Undefined: no budget applies to the owner, or none was read yet.
   */
  standingOf(ownerId: string): BudgetStanding | undefined;
  /** The owner's standing, read now when the cached one is stale. */
  read(ownerId: string): Promise<BudgetStanding | undefined>;
  /** Called with the owner whose standing changed state (ok, warning, exceeded) after a read. */
  onChange(listener: (ownerId: string) => void): () => void;
}
