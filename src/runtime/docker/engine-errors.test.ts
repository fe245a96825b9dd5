import { describe, expect, it } from 'vitest';
import { RuntimeError } from '../types.js';
import { engineError, isNotFound, reasonOf } from './engine-errors.js';

function httpError(statusCode: number, message: string) {
  return Object.assign(new Error(`(HTTP code ${statusCode}) unexpected - ${message} `), {
    statusCode,
    json: { message },
  });
}

describe('engine errors', () => {
  it('an unreachable engine is UNAVAILABLE and names the socket', () => {
    const cause = Object.assign(new Error('connect ENOENT /var/run/docker.sock'), { code: 'ENOENT' });
    const error = engineError(cause, 'cannot list workers', '/var/run/docker.sock');
    expect(error).toBeInstanceOf(RuntimeError);
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toBe(
      'cannot reach the Docker engine at /var/run/docker.sock: connect ENOENT /var/run/docker.sock',
    );
  });

  it('an engine answer is RUNTIME_ERROR (or the fallback) with the engine reason', () => {
    const error = engineError(httpError(500, 'driver failed'), 'cannot start worker w1', '/s');
    expect(error.code).toBe('RUNTIME_ERROR');
    expect(error.message).toBe('cannot start worker w1: driver failed');
    expect(
      engineError(httpError(404, 'manifest unknown'), 'cannot pull', '/s', 'IMAGE_PULL_FAILED').code,
    ).toBe('IMAGE_PULL_FAILED');
  });

  it('a RuntimeError passes through', () => {
    const original = new RuntimeError('NOT_FOUND', 'gone');
    expect(engineError(original, 'x', '/s')).toBe(original);
  });

  it('reads the reason from the message when there is no json', () => {
    expect(reasonOf(new Error('(HTTP code 409) conflict - name in use '))).toBe('name in use');
    expect(isNotFound(httpError(404, 'no such container'))).toBe(true);
    expect(isNotFound(new Error('x'))).toBe(false);
  });
});
