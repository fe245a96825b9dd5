/** Every operation of the wire contract lives under this path. */
export const API_PREFIX = '/gpu-instance/openapi/v1';
