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
        // Endpoint authentication (an op's input is logged as `input.mtls.…`): inputForLog
        // redacts them first; these catch any other call that would log them.
        'private_key',
        '*.private_key',
        '*.*.private_key',
        'client_secret',
        '*.client_secret',
        '*.*.client_secret',
        'access_token',
        '*.access_token',
      ],
      censor: '[redacted]',
    },
    // A URL's user info (a password typed into an endpoint URL) never reaches a line either.
    formatters: { log: (object) => scrubLogValue(object) as Record<string, unknown> },
  }
  return destination ? pino(options, destination) : pino(options)
}
