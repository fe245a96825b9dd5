import { describe, expect, it } from 'vitest';
import { toWireEvent } from './events.js';

const at = Date.UTC(2026, 10, 21, 23, 29, 55);

describe('toWireEvent', () => {
  it('gives the time in ISO 8601 and passes other events through', () => {
    expect(
      toWireEvent({ id: 3, at, type: 'state', message: 'serving: 1 running', data: { state: 'serving' } }),
    ).toEqual({
      id: 3,
      at: '2026-11-21T23:29:55.000Z',
      type: 'state',
      message: 'serving: 1 running',
      data: { state: 'serving' },
    });
  });

  it('names the fields of an updated event by their wire keys, in data and in the message', () => {
    const event = toWireEvent({
      id: 2,
      at,
      type: 'updated',
      message: 'updated workers, env, rootfsSizeGB',
      data: { fields: ['workers', 'env', 'rootfsSizeGB'], revision: 2 },
    });
    expect(event.message).toBe('updated workerConfig, envs, rootfsSize');
    expect(event.data).toEqual({ fields: ['workerConfig', 'envs', 'rootfsSize'], revision: 2 });
  });

  it('keeps a message it does not recognise and a field it does not know', () => {
    const event = toWireEvent({
      id: 2,
      at,
      type: 'updated',
      message: 'changed by hand',
      data: { fields: ['scaling', 'somethingNew'] },
    });
    expect(event.message).toBe('changed by hand');
    expect(event.data.fields).toEqual(['policy', 'somethingNew']);
  });
});
