/**
 * The namespace's pods of this installation, kept in memory from one watch (object-view.ts: listed once, watched
 * from the list's version, resumed, relisted on 410 Gone, reconnected with backoff).
 */
import type { Logger } from 'pino';
import type { Timers } from '../../ports/clock.js';
import type { KubernetesApi } from './api.js';
import { ObjectView } from './object-view.js';
import type { Pod } from './objects.js';

export interface PodViewOptions {
  api: KubernetesApi;
  namespace: string;
  labelSelector: string;
  logger: Logger;
  timers?: Timers;
  /** Reconnect backoff; default 200 ms doubling up to 5 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** Every change of a pod: `before` undefined when it appeared, `after` undefined when it was deleted. */
  onChange: (before: Pod | undefined, after: Pod | undefined) => void;
}

export class PodView extends ObjectView<Pod> {
  constructor(options: PodViewOptions) {
    const { api, namespace, labelSelector } = options;
    super({
      kind: 'pod',
      logger: options.logger,
      onChange: options.onChange,
      ...(options.timers ? { timers: options.timers } : {}),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      source: {
        list: () => api.listPods(namespace, labelSelector),
        watch: (o, onEvent, onEnd) => api.watchPods(namespace, { ...o, labelSelector }, onEvent, onEnd),
      },
    });
  }

  /** The pods by name, once the view is live (see ObjectView.objects). */
  pods(): Promise<ReadonlyMap<string, Pod>> {
    return this.objects();
  }
}
