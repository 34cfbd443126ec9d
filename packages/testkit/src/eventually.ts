/**
 * Waits for a state, not for a time: calls `check` until it returns a value other than
 * `undefined`, `null` or `false`, and returns that value; fails naming `what` (and the last
 * value seen) after `timeoutMs`. Every "wait until" in the suite goes through here.
 */
export async function eventually<T>(
  what: string,
  check: () => T | Promise<T>,
  options: { timeoutMs?: number; everyMs?: number } = {},
): Promise<Exclude<T, undefined | null | false>> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000)
  let last: T | undefined
  for (;;) {
    last = await check()
    if (last !== undefined && last !== null && last !== false) return last as Exclude<T, undefined | null | false>
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`)
    await new Promise((r) => setTimeout(r, options.everyMs ?? 50))
  }
}
