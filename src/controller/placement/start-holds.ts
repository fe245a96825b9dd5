/**
 * What keeps a worker awaiting placement from it, applied each reconcile before placement: its owner's spent budget
 * (the plan's holds, decided by budget-holds.ts: the worker stays pending with the BUDGET_EXCEEDED sentence) and its
 * endpoint's models not on this machine yet (fetched by workers/model-fetcher.ts: the worker waits in `downloading`,
 * holding no GPU, and fails when a fetch fails). Every change is a move of the worker lifecycle.
 */
import { describeStanding } from '../../domain/budget.js';
import type { Endpoint } from '../../domain/endpoint.js';
import type { BudgetStandings } from '../../ports/budgets.js';
import { holdChanges } from '../budget-holds.js';
import type { ControllerLogger, ControllerOptions } from '../controller-options.js';
import type { WorkerLifecycle } from '../lifecycle/worker-lifecycle.js';
import type { PlanAction } from '../planner.js';
import { awaitsPlacement } from '../workers/managed-worker.js';
import { ModelFetcher } from '../workers/model-fetcher.js';
import type { WorkerBook } from '../workers/worker-book.js';

export interface StartHoldsOptions {
  book: WorkerBook;
  lifecycle: Pick<WorkerLifecycle, 'move' | 'failByPlan'>;
  /** Owners' budgets; absent: no budget holds. */
  budgets?: Pick<BudgetStandings, 'standingOf'> | undefined;
  /** The machine's model cache and the owners' hub tokens; absent: no model holds. */
  models?: ControllerOptions['models'];
  clock: () => number;
  logger: ControllerLogger;
  /** The live endpoints as of the last pass (a fetch's progress reconciles the owner's endpoints that name models). */
  endpoints: () => ReadonlyMap<string, Endpoint>;
  pokeEndpoint: (endpointId: string) => void;
}

export class StartHolds {
  readonly #o: StartHoldsOptions;
  /** Each owner's models, fetched before their workers are placed (model-fetcher.ts); absent without a cache. */
  readonly #models: ModelFetcher | undefined;

  constructor(options: StartHoldsOptions) {
    this.#o = options;
    const models = options.models;
    this.#models = models
      ? new ModelFetcher({
          cache: models.cache,
          token: models.token,
          clock: options.clock,
          logger: options.logger,
          onChange: (ownerId) => {
            for (const endpoint of options.endpoints().values())
              if (endpoint.ownerId === ownerId && endpoint.spec.models.length > 0)
                options.pokeEndpoint(endpoint.id);
          },
        })
      : undefined;
  }

  /** The owner's BUDGET_EXCEEDED sentence while its budget is spent (the plan and the endpoint's condition take it). */
  budgetExceeded(ownerId: string): string | undefined {
    const standing = this.#o.budgets?.standingOf(ownerId);
    return standing?.state === 'exceeded' ? describeStanding(standing) : undefined;
  }

  /**
   * The plan's holds (an owner past its budget): those it names stay pending with its message; any other held
   * worker of the endpoint is let go to placement (the budget allows it again, or minNum does).
   */
  holdForBudget(endpointId: string, actions: readonly PlanAction[]): void {
    const holds = new Map<string, string>();
    for (const a of actions) if (a.type === 'hold') holds.set(a.workerId, a.message);
    for (const { worker, message } of holdChanges(this.#o.book.ofEndpoint(endpointId), holds)) {
      if (message !== undefined) {
        worker.budgetHeld = true;
        this.#o.lifecycle.move(worker, { state: worker.state, message, error: worker.error });
      } else {
        delete worker.budgetHeld;
        this.#o.lifecycle.move(worker, { state: worker.state, message: 'waiting for placement', error: '' });
      }
    }
  }

  /**
   * Workers awaiting placement whose endpoint's models are not all here wait in `downloading` (no GPU held) while
   * they are fetched; those whose models are here go back to awaiting placement; a failed fetch fails them. Returns
   * the endpoints whose workers it moved.
   */
  holdForModels(live: ReadonlyMap<string, Endpoint>, now: number): Set<string> {
    const changed = new Set<string>();
    const fetcher = this.#models;
    if (!fetcher) return changed;
    const { book, lifecycle } = this.#o;
    for (const record of [...book.all()]) {
      const downloading = record.state === 'downloading';
      if (!downloading && !awaitsPlacement(record)) continue;
      const endpoint = live.get(record.endpointId);
      if (!endpoint || (endpoint.spec.models.length === 0 && !downloading)) continue;
      const verdict = fetcher.need(endpoint.ownerId, endpoint.spec.models, !downloading);
      if (verdict.ready) {
        if (downloading) {
          // The end of its `model` phase (the Server-Timing of the requests that waited for this cold start).
          record.downloadedAt = now;
          lifecycle.move(record, { state: 'pending', message: 'models ready; waiting for GPUs' });
        }
      } else if (verdict.failed) {
        lifecycle.failByPlan(record, 'MODEL_DOWNLOAD_FAILED', verdict.message, now);
      } else {
        record.downloadingAt ??= now;
        lifecycle.move(record, { state: 'downloading', message: verdict.message });
      }
      changed.add(record.endpointId);
    }
    return changed;
  }
}
