// @ts-check
// The endpoint form's "Authentication" fieldset, shared by "Add endpoint" and "Edit endpoint":
// a client certificate (mTLS) and OAuth2 client credentials. The private key and the client
// secret are never sent back by the server: when editing, left empty they keep what is held.
import { h, time, uid } from './ui.js'

/**
 * The fieldset, filled from `endpoint` when editing. `read()` gives the body's `mtls` and
 * `oauth2` (null when switched off; left out when editing and nothing was changed).
 * @param {any} [endpoint]
 */
export function endpointAuthFields(endpoint) {
  const heldMtls = endpoint?.mtls ?? null
  const heldOauth2 = endpoint?.oauth2 ?? null
  const pem = (/** @type {string} */ name, /** @type {string} */ label, /** @type {string} */ value, /** @type {string} */ placeholder) => {
    const id = uid(`mtls-${name}`)
    const area = /** @type {HTMLTextAreaElement} */ (h('textarea', { id, name: `mtls.${name}`, rows: '4', spellcheck: 'false', autocomplete: 'off', placeholder }))
    area.value = value
    return { area, field: h('div', { class: 'field' }, h('label', { for: id }, label), area) }
  }
  const text = (/** @type {string} */ name, /** @type {string} */ label, /** @type {string} */ value, type = 'text', placeholder = '') => {
    const id = uid(`oauth2-${name}`)
    const input = /** @type {HTMLInputElement} */ (h('input', { id, name: `oauth2.${name}`, type, autocomplete: 'off', spellcheck: 'false', value, placeholder }))
    return { input, field: h('div', { class: 'field' }, h('label', { for: id }, label), input) }
  }
  const toggle = (/** @type {string} */ label, /** @type {boolean} */ on, /** @type {HTMLElement} */ body) => {
    const id = uid('auth-toggle')
    const box = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', id, checked: on }))
    body.hidden = !on
    box.addEventListener('change', () => (body.hidden = !box.checked))
    return { box, field: h('div', {}, h('span', { class: 'check' }, box, h('label', { for: id }, label)), body) }
  }

  const certificate = pem('certificate', 'Client certificate (PEM)', heldMtls?.certificate ?? '', '-----BEGIN CERTIFICATE-----')
  const privateKey = pem('private_key', 'Private key (PEM, unencrypted)', '', heldMtls ? '(unchanged: stored sealed)' : '-----BEGIN PRIVATE KEY-----')
  const ca = pem('ca', "Receiver's CA (PEM, optional: else the system's)", heldMtls?.ca ?? '', '')
  const mtlsBody = h(
    'div',
    { class: 'auth-body' },
    heldMtls
      ? h('p', { class: 'hint' }, `Held: ${heldMtls.subject ?? 'certificate'}, SHA-256 ${heldMtls.fingerprint}, expires ${heldMtls.not_after}.`)
      : null,
    certificate.field,
    privateKey.field,
    ca.field,
  )
  const mtls = toggle('Present a client certificate (mTLS)', heldMtls !== null, mtlsBody)

  const tokenUrl = text('token_url', 'Token URL', heldOauth2?.token_url ?? '', 'url')
  const clientId = text('client_id', 'Client ID', heldOauth2?.client_id ?? '')
  const clientSecret = text('client_secret', 'Client secret', '', 'password', heldOauth2 ? '•••••••• (unchanged)' : '')
  const scope = text('scope', 'Scope (optional)', heldOauth2?.scope ?? '')
  const audience = text('audience', 'Audience (optional)', heldOauth2?.audience ?? '')
  const oauth2Body = h('div', { class: 'auth-body' }, tokenUrl.field, clientId.field, clientSecret.field, scope.field, audience.field)
  const oauth2 = toggle('OAuth2 client credentials (a bearer token on every request)', heldOauth2 !== null, oauth2Body)

  const field = h(
    'fieldset',
    { class: 'field', id: uid('authentication') },
    h('legend', {}, 'Authentication ', h('span', { class: 'muted' }, '(optional)')),
    h('p', { class: 'hint' }, 'The private key and the client secret are stored sealed and never shown again; when editing, leave them empty to keep them.'),
    mtls.field,
    oauth2.field,
  )
  const orNull = (/** @type {string} */ s) => (s.trim() === '' ? null : s.trim())
  return {
    field,
    /** The body's `mtls` and `oauth2`. */
    read() {
      /** @type {Record<string, unknown>} */
      const body = {}
      if (!mtls.box.checked) {
        if (heldMtls || !endpoint) body['mtls'] = null
      } else {
        const key = privateKey.area.value.trim()
        const unchanged = heldMtls && key === '' && certificate.area.value.trim() === heldMtls.certificate.trim() && (orNull(ca.area.value) ?? null) === (heldMtls.ca?.trim() ?? null)
        if (!unchanged) body['mtls'] = { certificate: certificate.area.value.trim(), ...(key ? { private_key: key } : {}), ca: orNull(ca.area.value) }
      }
      if (!oauth2.box.checked) {
        if (heldOauth2 || !endpoint) body['oauth2'] = null
      } else {
        const secret = clientSecret.input.value
        body['oauth2'] = {
          token_url: tokenUrl.input.value.trim(),
          client_id: clientId.input.value.trim(),
          ...(secret ? { client_secret: secret } : {}),
          scope: orNull(scope.input.value),
          audience: orNull(audience.input.value),
        }
      }
      return body
    },
  }
}

/** The details list's lines for the endpoint's authentication, or null when it has none. @param {any} endpoint */
export function authenticationSummary(endpoint) {
  const lines = []
  if (endpoint.mtls) {
    const m = endpoint.mtls
    lines.push(h('div', {}, 'mTLS: ', h('code', {}, m.subject ?? 'certificate'), `, SHA-256 `, h('code', { class: 'break' }, m.fingerprint), ', expires ', time(m.not_after), m.ca ? ', CA pinned' : ", system CAs"))
  }
  if (endpoint.oauth2) {
    const o = endpoint.oauth2
    lines.push(h('div', {}, 'OAuth2: client ', h('code', {}, o.client_id), ' at ', h('code', { class: 'break' }, o.token_url), o.scope ? [', scope ', h('code', {}, o.scope)] : '', o.audience ? [', audience ', h('code', {}, o.audience)] : ''))
  }
  return lines.length > 0 ? lines : null
}
