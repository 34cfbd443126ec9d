import type { CliIo } from '@hookledger/cli'

/** The process's own output: stdout for results, stderr for messages. */
export const processIo: CliIo = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
}
