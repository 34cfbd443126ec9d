/**
 * Resolves once `work` settles (true) or `ms` pass (false), whichever is first. For the bounded
 * waits of a shutdown. The timer holds the process (it is not unref'd): a shutdown waiting with
 * nothing else left to run would otherwise let the event loop run dry, and Node end the process
 * with code 13 while a top-level await is unsettled.
 */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timedOut = Symbol('timed out')
  const first = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    new Promise<typeof timedOut>((resolve) => (timer = setTimeout(() => resolve(timedOut), ms))),
  ]).finally(() => clearTimeout(timer))
  return first !== timedOut
}
