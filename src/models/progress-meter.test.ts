import { describe, expect, it } from 'vitest';
import { ProgressMeter } from './progress-meter.js';

describe('a download progress meter', () => {
  it('gives the rate over the last seconds, so a stall shows', () => {
    let now = 0;
    const meter = new ProgressMeter({ clock: () => now, bytesTotal: 1_000, windowMs: 5_000 });
    for (let second = 1; second <= 10; second += 1) {
      now = second * 1_000;
      meter.add(10);
    }
    expect(meter.bytesPerSecond()).toBe(10);
    now = 12_000;
    meter.add(0);
    // In the last 5 s (7 s to 12 s): 30 bytes.
    expect(meter.bytesPerSecond()).toBe(6);
    now = 20_000;
    meter.add(0);
    expect(meter.bytesPerSecond()).toBe(0);
    expect(meter.bytesDone).toBe(100);
  });

  it('counts bytes already there as done without counting them as speed', () => {
    let now = 0;
    const meter = new ProgressMeter({ clock: () => now, bytesTotal: 1_000 });
    meter.resumed(500);
    now = 1_000;
    meter.add(100);
    expect([meter.bytesDone, meter.bytesPerSecond()]).toEqual([600, 100]);
  });
});
