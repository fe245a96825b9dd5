/**
 * The webhook-secret operations on the wire (a Corral extension): the rotate body, read into the endpoint id, and
 * the answer of a read or a rotation.
 */
import { readId } from './endpoint-input.js';
import { ENDPOINT_ID_BODY_KEYS } from './paths.js';

export interface WireWebhookSecret {
  endpointId: string;
  /** `whsec_` and base64: verify deliveries with it as the Standard Webhooks libraries do. */
  secret: string;
  /** When this secret was made (first read or last rotation), ISO 8601. */
  createdAt: string;
}

/** `{"id": <endpoint id>}`; undefined when the body names no endpoint. */
export function parseRotateWebhookSecret(body: unknown): string | undefined {
  return readId(body, [...ENDPOINT_ID_BODY_KEYS]);
}

export function toWireWebhookSecret(info: {
  endpointId: string;
  secret: string;
  createdAt: number;
}): WireWebhookSecret {
  return {
    endpointId: info.endpointId,
    secret: info.secret,
    createdAt: new Date(info.createdAt).toISOString(),
  };
}
