/**
 * Bounds one step of a test that has no bound of its own (a process's exit, a server's start):
 * settles as `work` does, or fails naming `what` after `ms` (a function is asked then, so it can
 * say what was seen by that time). A test's own timeout says only that the whole test ran out;
 * this says which step did.
 */
export async function within<T>(what: string | (() => string), ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${typeof what === 'string' ? what : what()}: not done within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([work, expired])
  } finally {
    clearTimeout(timer)
  }
}
