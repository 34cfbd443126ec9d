import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from './config.js'

describe('HOOKLEDGER_EGRESS_PROXY', () => {
  it('is unset by default: no proxy', () => {
    expect(loadConfig({}).HOOKLEDGER_EGRESS_PROXY).toBeUndefined()
  })

  it('parses http://user:password@host:port', () => {
    const proxy = loadConfig({ HOOKLEDGER_EGRESS_PROXY: 'http://alice:s3cret@proxy.internal:3128' }).HOOKLEDGER_EGRESS_PROXY
    expect(proxy).toMatchObject({ host: 'proxy.internal', port: 3128, label: 'proxy.internal:3128' })
  })

  it.each([
    ['socks5://alice:s3cret@proxy:1080', 'scheme must be http, not socks5'],
    ['https://alice:s3cret@proxy:3128', 'scheme must be http, not https'],
    ['proxy.internal', 'is not a URL'],
  ])('refuses %s with a line naming the setting, not the password', (value, message) => {
    let error: unknown
    try {
      loadConfig({ HOOKLEDGER_EGRESS_PROXY: value })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    const text = (error as Error).message
    expect(text).toContain(`  HOOKLEDGER_EGRESS_PROXY: ${message}`)
    expect(text).not.toContain('s3cret')
  })
})
