import { pino, type DestinationStream, type Logger as Pino, type LoggerOptions } from 'pino'
import type { Config } from './config.js'
import { scrubLogValue } from './log-scrub.js'

/**
 * Creates the process logger, with secrets and auth headers redacted. It writes to stdout
 * unless `destination` is given (tests capture the lines).
 */
export function createLogger(
  config: Pick<Config, 'LOG_LEVEL'>,
  destination?: DestinationStream,
): Pino {
  const options: LoggerOptions = {
    level: config.LOG_LEVEL,
    redact: {
      paths: [
        'secret',
        '*.secret',
        // A v1a key pair's `whsk_` half (V1aKeyPair.secretKey), should one ever reach a log call.
        'secretKey',
        '*.secretKey',
        'token',
        '*.token',
        'headers.authorization',
        '*.headers.authorization',
        'req.headers.authorization',
        'headers["webhook-signature"]',
        '*.headers["webhook-signature"]',
        'password',
        '*.password',
      ],
      censor: '[redacted]',
    },
    // A URL's user info (a password typed into an endpoint URL) never reaches a line either.
    formatters: { log: (object) => scrubLogValue(object) as Record<string, unknown> },
  }
  return destination ? pino(options, destination) : pino(options)
}
