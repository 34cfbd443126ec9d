// Sign in: paste an owner token; it is checked with one harmless read before it is kept.
import { api, session } from './api.js'
import { navigate } from './router.js'
import {
  clearFieldErrors,
  fill,
  flash,
  h,
  pageHeading,
  problemAlert,
  showFieldError,
} from './ui.js'

export const SIGN_IN_PATH = '/ui/sign-in'

/** Only an in-app path may be the page to return to. */
function nextPath() {
  const next = new URLSearchParams(location.search).get('next') ?? ''
  return /^\/ui\/(?!sign-in)[^\\]*$/.test(next) && !next.startsWith('//')
    ? next
    : '/ui/integrations/webhooks'
}

/** The token field and its hint: the form's one section. */
function tokenForm() {
  const token = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'token-hint',
  })
  const notice = h('div')
  const submit = h('button', { type: 'submit', class: 'button' }, 'Sign in')
  const form = h(
    'form',
    { class: 'card narrow', novalidate: true },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'token' }, 'Access token'),
      token,
      h(
        'p',
        { class: 'hint', id: 'token-hint' },
        'An owner token with the ',
        h('code', {}, 'admin'),
        ' scope, e.g. from ',
        h('code', {}, 'npx hookledger token create --owner default --scopes admin,publish'),
        '. It is kept in this tab only and forgotten when the tab closes.',
      ),
    ),
    notice,
    h('div', { class: 'button-row' }, submit),
  )
  return { form, token, notice, submit }
}

/** What a refused token means, said on the field (401, 403) or above the button (anything else). */
function showSignInRefusal({ token, notice }, err) {
  if (err.status === 401) {
    showFieldError(token, 'This token was not accepted (401). Check that it was copied whole and has not been revoked.')
    token.focus()
  } else if (err.status === 403) {
    showFieldError(token, 'This token is valid but may not manage webhooks (403): it needs the admin scope.')
    token.focus()
  } else {
    notice.append(problemAlert(err, 'Could not sign in.'))
  }
}

/** Checks the pasted token with one harmless read; only a token that passes is kept. */
async function submitSignIn(parts) {
  const { form, token, notice, submit } = parts
  clearFieldErrors(form)
  notice.replaceChildren()
  const value = token.value.trim()
  if (!value) {
    showFieldError(token, 'Paste a token to sign in.')
    token.focus()
    return
  }
  submit.disabled = true
  try {
    await api('GET', '/api/admin/webhooks', { query: { limit: 1 }, token: value })
    session.set(value)
    navigate(nextPath(), { replace: true })
  } catch (err) {
    showSignInRefusal(parts, err)
  } finally {
    submit.disabled = false
  }
}

export async function signInPage({ main }) {
  document.title = 'Sign in · hookledger admin'
  const message = flash.take('sign-in')
  const parts = tokenForm()
  parts.form.addEventListener('submit', (event) => {
    event.preventDefault()
    void submitSignIn(parts)
  })
  fill(
    main,
    pageHeading('Sign in'),
    message ? h('div', { class: 'notice notice-info', role: 'status' }, message) : null,
    h('p', { class: 'lead' }, 'The admin UI uses the same HTTP API as every other client, with your token.'),
    parts.form,
  )
}
