/** The pino logger of `corral serve`: structured, with secret-bearing fields redacted. */
import pino, { type Logger } from 'pino';

/** Structured logs; anything that could hold a secret is redacted even if a caller logs it by mistake. */
export function createLogger(options: { level: string; destination?: pino.DestinationStream }): Logger {
  return pino(
    {
      level: options.level,
      base: { service: 'corral' },
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          '*.password',
          '*.apiKey',
          '*.key',
          '*.secret',
          'password',
          'apiKey',
          'key',
          'secret',
        ],
        censor: '[redacted]',
      },
    },
    options.destination,
  );
}
