import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseServeSettings } from '../config/settings.js';
import { givenFlags, settingOptions } from './settings-options.js';

describe('--local-allow-root, the one setting that is a switch', () => {
  const parse = (argv: string[]) => {
    const command = new Command('serve').exitOverride();
    for (const option of settingOptions(['localAllowRoot', 'runtime'])) command.addOption(option);
    command.parse(argv, { from: 'user' });
    return givenFlags(command.opts());
  };

  it('takes no value on the command line, and is off by default', () => {
    expect(parse(['--local-allow-root', '--runtime', 'local'])).toEqual({
      localAllowRoot: 'true',
      runtime: 'local',
    });
    expect(parseServeSettings(parse(['--local-allow-root']), {}).localAllowRoot).toBe(true);
    expect(parseServeSettings(parse([]), {}).localAllowRoot).toBe(false);
  });

  it.each([
    ['1', true],
    ['true', true],
    ['0', false],
    ['false', false],
    ['', false],
  ])('CORRAL_LOCAL_ALLOW_ROOT=%j -> %s', (value, allowed) => {
    expect(parseServeSettings({}, { CORRAL_LOCAL_ALLOW_ROOT: value }).localAllowRoot).toBe(allowed);
  });

  it('refuses other values in one line', () => {
    expect(() => parseServeSettings({}, { CORRAL_LOCAL_ALLOW_ROOT: 'yes' })).toThrow(
      new ConfigError('invalid --local-allow-root (CORRAL_LOCAL_ALLOW_ROOT): expected 1, true, 0 or false'),
    );
  });
});
