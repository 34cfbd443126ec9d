import { describe, expect, it } from 'vitest'
import { parseMcpPrincipal } from './principal.js'

describe('parseMcpPrincipal', () => {
  it('defaults to admin + publish for the owner', () => {
    expect(parseMcpPrincipal({ owner: 'acme' })).toEqual({
      ok: true,
      principal: { owner_id: 'acme', scopes: ['admin', 'publish'] },
    })
    expect(parseMcpPrincipal({ owner: 'acme', scopes: 'publish' })).toEqual({
      ok: true,
      principal: { owner_id: 'acme', scopes: ['publish'] },
    })
  })

  it('binds the operator scope to no owner, and only alone', () => {
    expect(parseMcpPrincipal({ scopes: 'operator' })).toEqual({
      ok: true,
      principal: { owner_id: '*', scopes: ['operator'] },
    })
    expect(parseMcpPrincipal({ owner: 'acme', scopes: 'admin,operator' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('alone'),
    })
  })

  it('refuses a missing or malformed owner and unknown scopes', () => {
    expect(parseMcpPrincipal({})).toMatchObject({
      ok: false,
      message: expect.stringContaining('--owner'),
    })
    expect(parseMcpPrincipal({ owner: 'Acme Inc' })).toMatchObject({ ok: false })
    expect(parseMcpPrincipal({ owner: 'acme', scopes: 'root' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('"root"'),
    })
    expect(parseMcpPrincipal({ owner: 'acme', scopes: ',' })).toMatchObject({ ok: false })
  })
})
