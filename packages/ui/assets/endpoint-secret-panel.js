// The one-time secret after create or rotate: copy button, and the warning that it cannot be
// shown again.
import { h } from './ui.js'

/** The secret, once: copy button, and the warning that it cannot be shown again. */
export function secretPanel(secret, { created }) {
  const input = h('input', {
    id: 'one-time-secret',
    type: 'text',
    readonly: true,
    value: secret,
    class: 'mono',
    spellcheck: 'false',
    'aria-describedby': 'one-time-secret-warning',
  })
  const copied = h('span', { class: 'muted small', role: 'status' })
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret)
      copied.textContent = 'Copied to the clipboard.'
    } catch {
      input.focus()
      input.select()
      copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.'
    }
  }
  const panel = h(
    'section',
    { class: 'secret-panel', 'aria-labelledby': 'one-time-secret-heading' },
    h(
      'h2',
      { id: 'one-time-secret-heading' },
      created ? 'Endpoint created: its signing secret' : 'New signing secret',
    ),
    h(
      'p',
      { class: 'warning', id: 'one-time-secret-warning' },
      h('strong', {}, 'Copy this secret now: it will not be shown again. '),
      created
        ? 'Your receiver verifies the webhook-signature header with it.'
        : 'The previous secret keeps signing alongside it for the grace window, so update the receiver soon.',
    ),
    h(
      'div',
      { class: 'secret-row' },
      h('label', { for: input.id, class: 'visually-hidden' }, 'Signing secret'),
      input,
      h('button', { type: 'button', class: 'button', onclick: copy }, 'Copy'),
    ),
    copied,
    h(
      'div',
      { class: 'button-row' },
      h(
        'button',
        { type: 'button', class: 'button secondary', onclick: () => panel.remove() },
        'I have stored it',
      ),
    ),
  )
  return panel
}
