/** Which signs on a machine say that a Docker engine should be there. */
import { describe, expect, it } from 'vitest';
import { expectedDockerEngine } from './engine-presence.js';

describe('expectedDockerEngine', () => {
  it.each<{ name: string; env: NodeJS.ProcessEnv; files: string[]; expected: string | undefined }>([
    {
      name: 'DOCKER_HOST set',
      env: { DOCKER_HOST: 'unix:///run/user/1000/docker.sock', PATH: '/usr/bin' },
      files: [],
      expected: 'DOCKER_HOST is set (unix:///run/user/1000/docker.sock)',
    },
    {
      name: 'the default socket exists',
      env: { PATH: '/usr/bin' },
      files: ['/var/run/docker.sock'],
      expected: '/var/run/docker.sock exists',
    },
    {
      name: 'dockerd installed, no socket',
      env: { PATH: '/usr/local/bin:/usr/bin' },
      files: ['/usr/bin/dockerd'],
      expected: '/usr/bin/dockerd is installed',
    },
    {
      name: 'only the docker CLI installed',
      env: { PATH: '/opt/bin' },
      files: ['/opt/bin/docker'],
      expected: '/opt/bin/docker is installed',
    },
    { name: 'nothing at all', env: { PATH: '/usr/bin:/bin' }, files: [], expected: undefined },
    { name: 'an empty DOCKER_HOST and no PATH', env: { DOCKER_HOST: ' ' }, files: [], expected: undefined },
  ])('$name -> $expected', ({ env, files, expected }) => {
    const present = new Set(files);
    expect(expectedDockerEngine({ env, exists: (path) => present.has(path) })).toBe(expected);
  });
});
