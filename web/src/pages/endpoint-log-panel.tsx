/**
 * The log of every worker of an endpoint at once, followed live: each line prefixed by its worker, new workers
 * joining as they appear. The following itself is the client's `followEndpointLogs` (src/client/follow.ts), the
 * same as `corral logs -f`.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { followEndpointLogs } from '../../../src/client/index.js';
import { describeError, useApi } from '../api-context.js';

/** Lines kept on the page; older ones are dropped. */
const MAX_LINES = 2000;
/** Lines of each worker there at the start. */
const TAIL = 200;

interface Line {
  /** Increasing, for keys. */
  n: number;
  workerId: string;
  text: string;
}

export function EndpointLogPanel(props: { endpointId: string }) {
  const api = useApi();
  const [lines, setLines] = useState<Line[]>([]);
  const [workers, setWorkers] = useState<string[]>([]);
  const [status, setStatus] = useState('connecting');
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const abort = new AbortController();
    let pending: Line[] = [];
    let flush: ReturnType<typeof setTimeout> | undefined;
    let count = 0;
    setLines([]);
    setWorkers([]);
    setStatus('following');
    const add = (workerId: string, text: string) => {
      pending.push({ n: count++, workerId, text });
      // Lines arrive in bursts: the page renders at most ten times a second.
      flush ??= setTimeout(() => {
        const batch = pending;
        pending = [];
        flush = undefined;
        setLines((old) => [...old, ...batch].slice(-MAX_LINES));
      }, 100);
    };
    void (async () => {
      try {
        const end = await api.call((client) =>
          followEndpointLogs({
            client,
            endpointId: props.endpointId,
            tail: TAIL,
            signal: abort.signal,
            onLine: add,
            onJoin: (workerId) => {
              setWorkers((old) => [...old, workerId]);
              setStatus('following');
            },
            onWorkerError: (workerId, error) => add(workerId, `(its log stopped: ${describeError(error)})`),
            onWaiting: () => setStatus('waiting for a worker'),
            onRetrying: (error) => setStatus(`retrying: ${describeError(error)}`),
          }),
        );
        if (!abort.signal.aborted)
          setStatus(end.by === 'deleted' ? 'ended: the endpoint was deleted' : 'ended');
      } catch (error) {
        if (!abort.signal.aborted) setStatus(`stopped: ${describeError(error)}`);
      }
    })();
    return () => {
      abort.abort();
      clearTimeout(flush);
    };
  }, [api, props.endpointId]);
  useEffect(() => {
    const element = box.current;
    if (element) element.scrollTop = element.scrollHeight;
  }, [lines]);
  return (
    <section aria-labelledby="all-log-title">
      <h2 id="all-log-title">
        Log of every worker{' '}
        <span class="muted">
          ({status}
          {workers.length > 0 ? `; ${workers.length} worker${workers.length === 1 ? '' : 's'} followed` : ''})
        </span>
      </h2>
      <pre class="log" ref={box} data-testid="all-workers-log">
        {lines.length === 0
          ? '(no output yet)'
          : lines.map((line) => (
              <span key={line.n} data-log-worker={line.workerId}>
                <span class="log-worker">[{line.workerId}]</span> {line.text}
                {'\n'}
              </span>
            ))}
      </pre>
    </section>
  );
}
