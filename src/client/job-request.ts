/**
 * The request that calls an endpoint's jobs API, as the CLI prints it and the dashboard copies it: `POST /runsync`
 * with `{"input": {...}}` and the key (the jobs API always needs one, public endpoint or not: docs/jobs.md).
 */
import type { WireEndpoint } from '../contract/wire.js';

/** The body of the example: RunPod's shape, an input for the handler to fill in. */
export const EXAMPLE_JOB_BODY = '{"input": {}}';

/** A curl that runs a job at `runsyncUrl` and prints its status and output. */
export function runsyncCurl(runsyncUrl: string): string {
  return `curl -sS -X POST -H "Authorization: Bearer $CORRAL_API_KEY" -H 'Content-Type: application/json' -d '${EXAMPLE_JOB_BODY}' ${runsyncUrl}`;
}

/** Whether the endpoint is called at its jobs URLs rather than at its own URL: a queue endpoint's url serves nothing. */
export function calledByJobs(
  endpoint: Pick<WireEndpoint, 'type' | 'jobUrls'>,
): endpoint is Pick<WireEndpoint, 'type'> & { jobUrls: NonNullable<WireEndpoint['jobUrls']> } {
  return endpoint.type === 'queue' && endpoint.jobUrls !== undefined;
}
