// The admin UI's "Authentication" fieldset in a real browser: an endpoint created with a client
// certificate and OAuth2 client credentials, its details page showing what is held (never the
// key or the secret), an edit that changes nothing writing nothing, a refusal landing on the
// fieldset, and switching both off.
import { mkdirSync } from 'node:fs'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestCa, type TestCa } from '@hookledger/testkit'
import { adminGet, launchBrowser, openTab, signedInContext, startStack, type Stack } from './admin-ui-stack.js'

// Screenshots for review, in the checkout (git-ignored), as the other admin UI tests keep them.
const SHOTS = new URL('../../bench-results/ui/', import.meta.url).pathname
mkdirSync(SHOTS, { recursive: true })

let stack: Stack
let browser: Browser
let ca: TestCa
beforeAll(async () => {
  ca = createTestCa()
  ;[stack, browser] = await Promise.all([startStack(), launchBrowser()])
})
afterAll(async () => {
  await browser?.close()
  await stack?.stop()
  ca?.dispose()
})

const CLIENT_SECRET = 'cs_ui_5e2b9d7c4a18f063'
const keyLine = (pem: string) => pem.split('\n')[1]!

describe('admin UI: endpoint authentication', () => {
  it('creates, shows, edits and removes mTLS and OAuth2 without ever showing the key or the secret', async () => {
    const context = await signedInContext(browser, stack)
    const { page, errors } = await openTab(context)
    await page.goto(`${stack.url}/ui/integrations/webhooks/new`)
    await page.getByRole('checkbox', { name: /booking\.created/ }).check()
    // https: a client certificate is presented in the TLS handshake only (nothing is delivered here).
    await page.getByLabel('Endpoint URL').fill('https://127.0.0.1:9/auth')

    await page.getByRole('checkbox', { name: /client certificate/ }).check()
    await page.getByLabel('Client certificate (PEM)').fill(ca.client.certificate)
    // Another certificate's key: refused on the Authentication fieldset, naming the key.
    await page.getByLabel('Private key (PEM, unencrypted)').fill(ca.issue('other', 'client').private_key)
    await page.getByLabel("Receiver's CA").fill(ca.ca)
    await page.getByRole('checkbox', { name: /OAuth2 client credentials/ }).check()
    await page.getByLabel('Token URL').fill('http://127.0.0.1:9/oauth/token')
    await page.getByLabel('Client ID').fill('hookledger-ui')
    await page.getByLabel('Client secret').fill(CLIENT_SECRET)
    await page.getByLabel('Scope (optional)').fill('webhooks:write')
    await page.getByRole('button', { name: 'Create endpoint' }).click()
    await page.getByText('mtls.private_key: does not match the certificate').waitFor()
    await page.locator('fieldset', { hasText: 'Authentication' }).screenshot({ path: `${SHOTS}endpoint-auth-form.png` })

    await page.getByLabel('Private key (PEM, unencrypted)').fill(ca.client.private_key)
    await page.getByRole('button', { name: 'Create endpoint' }).click()
    await page.getByRole('textbox', { name: 'Signing secret' }).waitFor()
    const id = new URL(page.url()).pathname.split('/').pop()!

    const details = page.locator('dl.details')
    await details.getByText('mTLS:').waitFor()
    const shown = await details.innerText()
    expect(shown).toContain('CN=hookledger-client')
    expect(shown).toContain('CA pinned')
    expect(shown).toContain('OAuth2: client hookledger-ui at http://127.0.0.1:9/oauth/token, scope webhooks:write')
    const held = await adminGet<{ mtls: { fingerprint: string }; oauth2: unknown }>(stack, `/api/admin/webhooks/${id}`)
    expect(shown).toContain(held.mtls.fingerprint)
    await details.screenshot({ path: `${SHOTS}endpoint-auth-details.png` })

    // Edit: the held key and secret are not in the form; saving unchanged keeps them.
    await page.getByRole('button', { name: 'Edit' }).click()
    expect(await page.getByLabel('Private key (PEM, unencrypted)').inputValue()).toBe('')
    expect(await page.getByLabel('Client secret').inputValue()).toBe('')
    const html = await page.content()
    expect(html).not.toContain(keyLine(ca.client.private_key))
    expect(html).not.toContain(CLIENT_SECRET)
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('button', { name: 'Edit' }).waitFor()
    expect(await adminGet(stack, `/api/admin/webhooks/${id}`)).toMatchObject({ mtls: held.mtls, oauth2: held.oauth2 })

    // Both switched off.
    await page.getByRole('button', { name: 'Edit' }).click()
    await page.getByRole('checkbox', { name: /client certificate/ }).uncheck()
    await page.getByRole('checkbox', { name: /OAuth2 client credentials/ }).uncheck()
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('button', { name: 'Edit' }).waitFor()
    expect(await adminGet(stack, `/api/admin/webhooks/${id}`)).toMatchObject({ mtls: null, oauth2: null })
    expect(await details.innerText()).not.toContain('mTLS:')
    expect(errors).toEqual([])
    await context.close()
  })

  it('sets a rate limit and strict ordering on an endpoint, shows them, edits them and clears the limit', async () => {
    const context = await signedInContext(browser, stack)
    const { page, errors } = await openTab(context)
    await page.goto(`${stack.url}/ui/integrations/webhooks/new`)
    await page.getByRole('checkbox', { name: /booking\.created/ }).check()
    await page.getByLabel('Endpoint URL').fill('https://127.0.0.1:9/paced')
    await page.getByRole('checkbox', { name: /Limit the rate/ }).check()
    // Zero per second: refused, the problem shown on the fieldset naming the field.
    await page.getByLabel('Requests per second').fill('0')
    await page.getByRole('button', { name: 'Create endpoint' }).click()
    await page.getByText(/rate_limit\.per_second/).waitFor()
    await page.getByLabel('Requests per second').fill('50')
    await page.getByLabel(/^Burst/).fill('5')
    await page.getByRole('checkbox', { name: /Adaptive/ }).check()
    await page.getByLabel('Delivery order').selectOption('strict')
    await page.getByRole('button', { name: 'Create endpoint' }).click()
    await page.getByRole('textbox', { name: 'Signing secret' }).waitFor()
    const id = new URL(page.url()).pathname.split('/').pop()!
    expect(await adminGet(stack, `/api/admin/webhooks/${id}`)).toMatchObject({ rate_limit: { per_second: 50, burst: 5, adaptive: true }, ordering: 'strict' })
    const details = page.locator('dl.details')
    await details.getByText('50/s, burst 5, adaptive').waitFor()
    expect(await details.innerText()).toContain('Strict, by event time')
    await details.screenshot({ path: `${SHOTS}endpoint-pacing-details.png` })

    await page.getByRole('button', { name: 'Edit' }).click()
    expect(await page.getByLabel('Requests per second').inputValue()).toBe('50')
    await page.getByRole('checkbox', { name: /Limit the rate/ }).uncheck()
    await page.getByLabel('Delivery order').selectOption('none')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('button', { name: 'Edit' }).waitFor()
    expect(await adminGet(stack, `/api/admin/webhooks/${id}`)).toMatchObject({ rate_limit: null, ordering: 'none' })
    expect(errors).toEqual([])
    await context.close()
  })
})

