import { describe, expect, it } from 'vitest';
import { API_ERROR_CATALOGUE, ApiError } from './api-catalogue.js';
import { CorralError } from './corral-error.js';
import { bodyTooLarge, GATEWAY_ERROR_CATALOGUE, GatewayError } from './gateway-catalogue.js';
import {
  GPU_CHECKPOINT_ERROR_CATALOGUE,
  GpuCheckpointDeadlineError,
  GpuCheckpointDriverError,
  GpuCheckpointHelperError,
  GpuCheckpointIllegalStateError,
  GpuCheckpointLockTimeoutError,
  GpuCheckpointNoProcessError,
  GpuCheckpointNotSupportedError,
  GpuCheckpointOutOfMemoryError,
  GpuCheckpointUnavailableError,
} from './gpu-checkpoint-catalogue.js';
import { NODE_AGENT_ERROR_CATALOGUE } from './node-agent-catalogue.js';
import { SHARED_ERROR_STATUS } from './shared-codes.js';

describe('the two catalogues', () => {
  it('share exactly the codes listed in shared-codes.ts, each with the one status listed there', () => {
    const common = Object.keys(API_ERROR_CATALOGUE).filter((code) =>
      Object.hasOwn(GATEWAY_ERROR_CATALOGUE, code),
    );
    expect(common.sort()).toEqual(Object.keys(SHARED_ERROR_STATUS).sort());
    for (const [code, status] of Object.entries(SHARED_ERROR_STATUS)) {
      expect(API_ERROR_CATALOGUE[code as keyof typeof API_ERROR_CATALOGUE].status, code).toBe(status);
      expect(GATEWAY_ERROR_CATALOGUE[code as keyof typeof GATEWAY_ERROR_CATALOGUE].status, code).toBe(status);
    }
  });

  it.each([
    ['API', API_ERROR_CATALOGUE],
    ['gateway', GATEWAY_ERROR_CATALOGUE],
    ['GPU checkpoint', GPU_CHECKPOINT_ERROR_CATALOGUE],
    ['node agent', NODE_AGENT_ERROR_CATALOGUE],
  ])(
    'the %s catalogue has UPPER_SNAKE codes with error statuses and a description each',
    (_name, catalogue) => {
      for (const [code, entry] of Object.entries(catalogue)) {
        expect(code).toMatch(/^[A-Z][A-Z_]*[A-Z]$/);
        expect(entry.status).toBeGreaterThanOrEqual(400);
        expect(entry.status).toBeLessThan(600);
        expect(entry.description.length).toBeGreaterThan(0);
      }
    },
  );
});

describe('ApiError', () => {
  it("is a CorralError with the reason as its code and the catalogue's status", () => {
    const error = new ApiError('OUT_OF_RANGE', 'gpuNum must be within 1..8', { field: 'gpuNum' });
    expect(error).toBeInstanceOf(CorralError);
    expect(error).toMatchObject({ name: 'ApiError', code: 'OUT_OF_RANGE', status: 400 });
    expect(JSON.stringify(error.toBody())).toBe(
      '{"code":400,"reason":"OUT_OF_RANGE","message":"gpuNum must be within 1..8","metadata":{"field":"gpuNum"}}',
    );
  });
});

describe('GatewayError', () => {
  it("is a CorralError with the catalogue's status and, without a message, its description", () => {
    const error = new GatewayError('ROUTING_UNAVAILABLE');
    expect(error).toBeInstanceOf(CorralError);
    expect(error).toMatchObject({ name: 'GatewayError', code: 'ROUTING_UNAVAILABLE', status: 503 });
    expect(error.message).toBe(GATEWAY_ERROR_CATALOGUE.ROUTING_UNAVAILABLE.description);
    expect('cause' in error).toBe(false);
  });

  it('puts retryAfterSeconds in the body without changing its own metadata', () => {
    const error = new GatewayError('QUEUE_FULL', 'full', {
      retryAfterSeconds: 2,
      metadata: { queueLength: 5 },
    });
    expect(JSON.stringify(error.toBody())).toBe(
      '{"code":429,"reason":"QUEUE_FULL","message":"full","metadata":{"queueLength":5,"retryAfterSeconds":2}}',
    );
    expect(error.metadata).toEqual({ queueLength: 5 });
  });

  it('names CLIENT_GONE AbortError and keeps its cause', () => {
    const cause = new Error('reset');
    const error = new GatewayError('CLIENT_GONE', 'gone', { cause });
    expect(error.name).toBe('AbortError');
    expect(error.cause).toBe(cause);
  });

  it('bodyTooLarge carries the limit', () => {
    expect(bodyTooLarge(1024).toBody()).toEqual({
      code: 413,
      reason: 'BODY_TOO_LARGE',
      message: 'The request body is larger than the gateway accepts (1024 bytes).',
      metadata: { limitBytes: 1024 },
    });
  });
});

describe('GPU checkpoint errors', () => {
  it('are one class per code of their catalogue, each a CorralError with its status', () => {
    const classes = [
      GpuCheckpointUnavailableError,
      GpuCheckpointDeadlineError,
      GpuCheckpointHelperError,
      GpuCheckpointNoProcessError,
      GpuCheckpointLockTimeoutError,
      GpuCheckpointIllegalStateError,
      GpuCheckpointOutOfMemoryError,
      GpuCheckpointNotSupportedError,
      GpuCheckpointDriverError,
    ];
    const errors = classes.map((ErrorClass) => new ErrorClass('m'));
    expect(errors.map((error) => error.code).sort()).toEqual(
      Object.keys(GPU_CHECKPOINT_ERROR_CATALOGUE).sort(),
    );
    for (const error of errors) {
      expect(error).toBeInstanceOf(CorralError);
      expect(error.status).toBe(GPU_CHECKPOINT_ERROR_CATALOGUE[error.code].status);
      expect(error.name).toMatch(/^GpuCheckpoint\w+Error$/);
    }
  });
});
