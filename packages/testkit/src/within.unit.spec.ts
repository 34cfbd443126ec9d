import { describe, expect, it } from 'vitest'
import { within } from './within.js'

describe('within', () => {
  it('settles as the work does when it is in time', async () => {
    await expect(within('quick', 1_000, Promise.resolve(7))).resolves.toBe(7)
    await expect(within('failing', 1_000, Promise.reject(new Error('its own error')))).rejects.toThrow('its own error')
  })

  it('fails naming the step when the work is not done in time', async () => {
    await expect(within('the service to exit', 20, new Promise(() => {}))).rejects.toThrow('the service to exit: not done within 20 ms')
  })

  it('asks a function for its description only when the time is up', async () => {
    let asked = 0
    const describe = () => (asked++, 'the step, as seen at the deadline')
    await within(describe, 1_000, Promise.resolve())
    expect(asked).toBe(0)
    await expect(within(describe, 20, new Promise(() => {}))).rejects.toThrow('the step, as seen at the deadline: not done within 20 ms')
    expect(asked).toBe(1)
  })
})
