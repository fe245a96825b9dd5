// Which listed workers an installation adopts: its own, and pre-installation-id workers of its own endpoints.
import { describe, expect, it } from 'vitest';
import { LABELS } from '../runtime/types.js';
import { ownedHere } from './installation.js';

const endpoints = new Map([['e-ours', {}]]);

describe('ownedHere', () => {
  it.each([
    ['our installation', { [LABELS.installation]: 'inst-a', [LABELS.endpoint]: 'e-other' }, true],
    [
      'another installation, even for an endpoint id we know',
      { [LABELS.installation]: 'inst-b', [LABELS.endpoint]: 'e-ours' },
      false,
    ],
    [
      'no installation label, one of our endpoints (made before installation ids)',
      { [LABELS.endpoint]: 'e-ours' },
      true,
    ],
    ['no installation label, an endpoint we do not know', { [LABELS.endpoint]: 'e-other' }, false],
    ['no label at all', {}, false],
  ])('%s', (_case, labels, expected) => {
    expect(ownedHere(labels, 'inst-a', endpoints)).toBe(expected);
  });

  it('takes every worker when the controller has no installation id (tests, benchmarks)', () => {
    expect(ownedHere({ [LABELS.installation]: 'inst-b' }, undefined, endpoints)).toBe(true);
  });
});
