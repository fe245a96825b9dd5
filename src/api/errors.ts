/**
 * Old names of the API's error catalogue, kept for the OpenAPI document (api/openapi.ts) until it imports
 * src/errors/api-catalogue.ts, where the catalogue and `ApiError` live now.
 */
export {
  API_ERROR_CATALOGUE as ERROR_CATALOGUE,
  type ApiErrorReason as ErrorReason,
} from '../errors/api-catalogue.js';
