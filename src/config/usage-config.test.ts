/** The config file's `usage:` prices: their defaults, what is set, and what is refused. */
import { describe, expect, it } from 'vitest';
import { usagePrices } from './config.js';
import { parseConfigFile } from './file.js';

describe("the config file's usage prices", () => {
  it('defaults to USD, no GPU priced, every state 1 but suspended and downloading', () => {
    expect(usagePrices(parseConfigFile('{}', 'c.yaml').usage)).toEqual({
      currency: 'USD',
      gpuPerHour: {},
      stateFactors: { downloading: 0, starting: 1, active: 1, idle: 1, frozen: 1, suspended: 0 },
      suspendedMemoryGBHour: 0,
    });
  });

  it('takes a currency, per-GPU prices, state factors and the suspended memory price', () => {
    const file = parseConfigFile(
      [
        'usage:',
        '  currency: EUR',
        '  prices:',
        '    gpus: { h100-80g: { perHour: 2.5 } }',
        '    states: { idle: 0.5, frozen: 0.2 }',
        '    suspendedMemoryGBHour: 0.004',
      ].join('\n'),
      'c.yaml',
    );
    expect(usagePrices(file.usage)).toMatchObject({
      currency: 'EUR',
      gpuPerHour: { 'h100-80g': 2.5 },
      stateFactors: { idle: 0.5, frozen: 0.2, active: 1, suspended: 0 },
      suspendedMemoryGBHour: 0.004,
    });
  });

  it('refuses an unknown state, a negative price and a currency that is not a code', () => {
    expect(() => parseConfigFile('usage: { prices: { states: { busy: 1 } } }', 'c.yaml')).toThrow(
      /usage.prices.states/,
    );
    expect(() => parseConfigFile('usage: { prices: { gpus: { a: { perHour: -1 } } } }', 'c.yaml')).toThrow(
      /usage.prices.gpus.a.perHour/,
    );
    expect(() => parseConfigFile('usage: { currency: dollars }', 'c.yaml')).toThrow(/ISO 4217/);
  });
});
