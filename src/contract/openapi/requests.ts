/**
 * The request schemas of the OpenAPI document: the endpoint fields generated from the zod schemas that parse
 * them (contract/endpoint-schema.ts), and the bodies around them, whose rules live in code rather than in a
 * schema (create needs image.image and ports; lifecycle bodies name the endpoint by one of several keys).
 */
import '../endpoint-schema.js';
import { MAX_API_KEY_NAME_LENGTH } from '../api-keys.js';
import { MAX_INVOKE_KEY_NAME_LENGTH } from '../invoke-keys.js';
import { requestJsonSchemas } from '../json-schema.js';
import { ENDPOINT_ID_BODY_KEYS, ENDPOINT_ID_KEYS } from '../paths.js';
import { WORKER_ID_BODY_KEYS } from '../worker-drain.js';
import { bool, object, ref, type Schema, str } from './schema.js';

const credentialText = (description?: string) => str(description, { minLength: 1, maxLength: 4096 });

export function requestSchemas(): Record<string, Schema> {
  return {
    ...requestJsonSchemas(),
    CreateEndpointRequest: object({
      endpoint: { allOf: [ref('EndpointInput'), { required: ['image', 'ports'] }] },
    }),
    UpdateEndpointRequest: {
      description:
        'Partial update: omitted (or null) keys keep their value; [] clears a list and healthy: {} (or []) restores the health defaults. Objects merge one level deep; workerConfig, policy and image cannot be cleared.',
      allOf: [
        ref('EndpointInput'),
        {
          ...object(
            {
              id: str('The endpoint to update.'),
              endpoint_id: str('The endpoint to update, under the key some clients use.'),
            },
            { required: [] },
          ),
          anyOf: ENDPOINT_ID_KEYS.map((key) => ({ required: [key] })),
        },
      ],
    },
    EndpointIdRequest: {
      ...object(
        Object.fromEntries(
          ENDPOINT_ID_BODY_KEYS.map((key) => [
            key,
            str(key === 'id' ? 'The endpoint id.' : 'The endpoint id, under the key some clients use.'),
          ]),
        ),
        { required: [] },
      ),
      anyOf: ENDPOINT_ID_BODY_KEYS.map((key) => ({ required: [key] })),
    },
    JobRefRequest: object({ id: str('The endpoint id.'), job: str('The job id.') }),
    SaveCredentialsRequest: object({
      name: credentialText('A label, 1-4096 characters.'),
      username: credentialText(),
      password: credentialText('Stored encrypted; never returned.'),
    }),
    DrainWorkerRequest: {
      ...object(
        {
          ...Object.fromEntries(
            WORKER_ID_BODY_KEYS.map((key) => [
              key,
              str(key === 'workerID' ? 'The worker id, as workers[].id shows it.' : 'Alias of workerID.'),
            ]),
          ),
          drain: bool('true (the default) drains the worker; false undrains it.'),
        },
        { required: [] },
      ),
      anyOf: WORKER_ID_BODY_KEYS.map((key) => ({ required: [key] })),
    },
    IdRequest: object({ id: str() }),
    CreateInvokeKeyRequest: object(
      {
        id: str('The endpoint id.'),
        name: str(`A label for the key, at most ${MAX_INVOKE_KEY_NAME_LENGTH} characters (default empty).`),
      },
      { required: ['id'] },
    ),
    DeleteInvokeKeyRequest: object({ id: str('The endpoint id.'), keyId: str('The invoke key id.') }),
    SaveSecretRequest: object({
      name: str('Letters, digits, _ and -, 1-64 characters; referenced as {{ CORRAL_SECRET_name }}.', {
        pattern: '^[A-Za-z0-9_-]{1,64}$',
      }),
      value: str('Stored encrypted; never returned.', { minLength: 1, maxLength: 32768 }),
    }),
    SecretNameRequest: object({ name: str() }),
    CreateApiKeyRequest: object(
      {
        name: str(`A label for the key, at most ${MAX_API_KEY_NAME_LENGTH} characters (default empty).`, {
          maxLength: MAX_API_KEY_NAME_LENGTH,
        }),
        ownerId: str("The owner the key acts as (default: the caller's).", {
          pattern: '^[\\x21-\\x7e]{1,128}$',
        }),
        admin: bool('An admin key may manage keys and act for other owners (default false).'),
      },
      { required: [] },
    ),
  };
}
