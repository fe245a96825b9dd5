/** Store failures that callers handle; each has a stable code like the API's reasons. */
export class StoreError extends Error {
  constructor(
    readonly code: 'APP_NAME_TAKEN' | 'OPENAI_MODEL_TAKEN' | 'CONCURRENT_UPDATE',
    message: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}
