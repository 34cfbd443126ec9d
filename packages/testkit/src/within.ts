/**
 * Bounds one step of a test that has no bound of its own (a process's exit, a server's start):
 * settles as `work` does, or fails naming `what` after `ms`. A test's own timeout says only that
 * the whole test ran out; this says which step did.
 */
export async function within<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([work, expired])
  } finally {
    clearTimeout(timer)
  }
}
