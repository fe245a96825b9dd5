import { describe, expect, it } from 'vitest';
import { frozenMessage } from './tier-moves.js';

const AT = Date.UTC(2026, 10, 26, 17, 40, 12);

describe('frozenMessage', () => {
  it('says since when and what comes next, and where the freezer is weaker than a cgroup, why', () => {
    expect(frozenMessage(AT, undefined, false)).toBe('frozen since 2026-11-26T17:40:12Z');
    const note =
      'its process group is stopped (a process that left it runs on): no writable cgroup freezer (x)';
    expect(frozenMessage(AT, undefined, false, note)).toBe(`frozen since 2026-11-26T17:40:12Z; ${note}`);
  });
});
