import { describe, expect, it } from 'vitest';
import { jobsPathProblem, MAX_JOBS_PATH_LENGTH } from './jobs-path.js';

describe("an http endpoint's jobsPath", () => {
  it.each([
    '/run',
    '/v1/generate',
    '/',
    '/run/',
    '/a.b/c..d/...',
    "/v1/models:predict;x=1,y=(2)!$&'*+@~_-",
    '/caf%C3%A9',
    `/${'a'.repeat(MAX_JOBS_PATH_LENGTH - 1)}`,
  ])('takes the normalised path %s', (path) => {
    expect(jobsPathProblem(path)).toBeUndefined();
  });

  it.each([
    ['/../app/x', 'holds a . or .. segment'],
    ['/..', 'holds a . or .. segment'],
    ['/x/./y', 'holds a . or .. segment'],
    ['/x/.', 'holds a . or .. segment'],
    ['/%2e%2e/app/x', 'holds an encoded dot'],
    ['/%2E%2E/app/x', 'holds an encoded dot'],
    ['/.%2e/app/x', 'holds an encoded dot'],
    ['/%2e./app/x', 'holds an encoded dot'],
    ['/x%2Fy', 'holds an encoded dot'],
    ['/x%2f..%2fapp', 'holds an encoded dot'],
    ['/x%5capp', 'holds an encoded dot'],
    ['/..\\app', 'holds a backslash'],
    ['/x\\y', 'holds a backslash'],
    ['//evil.example/x', 'holds an empty segment'],
    ['/x//y', 'holds an empty segment'],
    ['run', 'must start with /'],
    ['', 'must start with /'],
    ['/run?x=1', 'holds a character'],
    ['/run#x', 'holds a character'],
    ['/r un', 'holds a character'],
    ['/r\tun', 'holds a character'],
    ['/r\nun', 'holds a character'],
    ['/café', 'holds a character'],
    ['/x%', 'holds a % that does not start'],
    ['/x%zz', 'holds a % that does not start'],
    [`/${'a'.repeat(MAX_JOBS_PATH_LENGTH)}`, `is longer than ${MAX_JOBS_PATH_LENGTH} characters`],
  ])('refuses %j: it %s', (path, problem) => {
    expect(jobsPathProblem(path)).toContain(problem);
  });

  it("takes only paths that a URL parser (fetch's) leaves as written in the delivery URL", () => {
    const taken = ['/run', '/v1/generate', '/a.b/..c', "/x:y@z;w=1!$&'()*+,~", '/caf%C3%A9', '/'];
    for (const path of taken) {
      expect(new URL(`http://127.0.0.1:1/e/app${path}`).pathname).toBe(`/e/app${path}`);
    }
  });
});
