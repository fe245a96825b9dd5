/** A worker's log, followed live (`GET endpoint/worker/log?follow=1` through the client's line stream). */
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, useApi } from '../api-context.js';

/** Lines kept on the page; older ones are dropped. */
const MAX_LINES = 2000;

export function LogPanel(props: { endpointId: string; workerId: string }) {
  const api = useApi();
  const [lines, setLines] = useState<string[]>([]);
  const [status, setStatus] = useState('connecting');
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const abort = new AbortController();
    setLines([]);
    setStatus('following');
    void (async () => {
      try {
        await api.call(async (client) => {
          let pending: string[] = [];
          let flush: ReturnType<typeof setTimeout> | undefined;
          for await (const line of client.streamWorkerLog(props.endpointId, props.workerId, {
            follow: true,
            tail: 500,
            signal: abort.signal,
          })) {
            pending.push(line);
            // Lines arrive in bursts: the page renders at most ten times a second.
            flush ??= setTimeout(() => {
              const batch = pending;
              pending = [];
              flush = undefined;
              setLines((old) => [...old, ...batch].slice(-MAX_LINES));
            }, 100);
          }
          if (flush !== undefined) clearTimeout(flush);
          setLines((old) => [...old, ...pending].slice(-MAX_LINES));
        });
        if (!abort.signal.aborted) setStatus('ended');
      } catch (error) {
        if (!abort.signal.aborted) setStatus(`stopped: ${describeError(error)}`);
      }
    })();
    return () => abort.abort();
  }, [api, props.endpointId, props.workerId]);
  useEffect(() => {
    const element = box.current;
    if (element) element.scrollTop = element.scrollHeight;
  }, [lines]);
  return (
    <section aria-labelledby="log-title">
      <h2 id="log-title">
        Log of <code>{props.workerId}</code> <span class="muted">({status})</span>
      </h2>
      <pre class="log" ref={box}>
        {lines.length === 0 ? '(no output yet)' : lines.join('\n')}
      </pre>
    </section>
  );
}
