// @ts-check
// What an owner can do to one delivery: resend it (completed or discarded only).
import { api } from './api.js'
import { h, problemAlert, successNotice } from './ui.js'

const RESENDABLE = new Set(['completed', 'discarded'])

/**
 * A "Resend" button for a settled delivery; `onDone` gets the fresh delivery.
 * @param {{ id: string, state: string }} delivery
 * @param {(fresh: any) => void} onDone
 * @param {HTMLElement} [status] where success or a problem is said
 */
export function resendButton(delivery, onDone, status) {
  if (!RESENDABLE.has(delivery.state)) return null
  return h(
    'button',
    {
      type: 'button',
      class: 'button secondary small',
      onclick: async (/** @type {Event} */ ev) => {
        const button = /** @type {HTMLButtonElement} */ (ev.currentTarget)
        button.disabled = true
        try {
          const fresh = await api('POST', `/api/admin/deliveries/${encodeURIComponent(delivery.id)}/redeliver`)
          status?.replaceChildren(successNotice(`Resent: run ${fresh.run} is due now.`))
          onDone(fresh)
        } catch (err) {
          status?.replaceChildren(problemAlert(err, 'Could not resend.'))
          button.disabled = false
        }
      },
    },
    'Resend',
  )
}

/** @param {{ text: string } | null} reason */
export const waitingText = (reason) => (reason ? reason.text : null)
