/**
 * How names and bodies are handed to dockerode so that the engine gets them only where they belong. docker-modem
 * writes an image name into the request path as given (`/images/<name>/json`): it is escaped here, so that no
 * name can add path segments or a query. And a POST whose path ends in `?` gets every option as a query parameter
 * as well as in the body: a container's create options (its env, secrets resolved) would travel in the URL, where
 * a large env is refused (431) and the engine's debug log shows it; only the container's name goes there.
 */
import type { DockerContainerSpec } from './container-spec.js';

/**
 * An image name as one path segment: `/`, `:`, `@`, `?`, `#`, `%` and `.` escaped (the dots too, since with a TCP
 * DOCKER_HOST docker-modem resolves the path as a URL, which would collapse `..` segments on this side).
 */
export function imagePathName(image: string): string {
  return encodeURIComponent(image).replaceAll('.', '%2E');
}

/**
 * What `docker.createContainer` is given for a worker: docker-modem sends `_query` as the query string and `_body`
 * as the JSON body (it reads both keys), so the name is the only query parameter and the rest travels in the body.
 */
export function createContainerOptions(spec: DockerContainerSpec): {
  _query: { name: string };
  _body: Omit<DockerContainerSpec, 'name'>;
} {
  const { name, ...body } = spec;
  return { _query: { name }, _body: body };
}
