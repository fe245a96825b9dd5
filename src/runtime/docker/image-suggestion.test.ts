import { describe, expect, it } from 'vitest';
import { closeLocalImage } from './image-suggestion.js';

const LOCAL = ['corral-test-worker:latest', 'nginx:1.27', 'nginx:latest', 'postgres:16', '<none>:<none>'];

describe('closeLocalImage', () => {
  it.each([
    ['corral-test-worke:latest', 'corral-test-worker:latest', 'a letter left out'],
    ['corral-test-worker:lates', 'corral-test-worker:latest', 'the same repository with another tag'],
    ['corral-test-worker:v2', 'corral-test-worker:latest', 'a tag the engine does not hold'],
    ['ngin:1.27', 'nginx:1.27', 'a letter left out, the tag kept'],
    ['postgre:16', 'postgres:16', 'a repository with one tag'],
  ])('%s -> %s (%s)', (wanted, meant) => {
    expect(closeLocalImage(wanted, LOCAL)).toBe(meant);
  });

  it.each([
    ['redis:7', 'nothing close'],
    ['ghcr.io/acme/model:1', 'another registry and repository'],
    ['nginxx:2', 'a close repository without the tag, with several tags'],
  ])('%s -> nothing (%s)', (wanted) => {
    expect(closeLocalImage(wanted, LOCAL)).toBeUndefined();
  });
});
