// The endpoint form's parts shared by "Add endpoint" and "Edit endpoint": the event type boxes,
// globs typed by hand, and which control a problem's field names.
import { h, uid } from './ui.js'

/** Globs typed by hand: separated by commas, spaces or new lines. */
export const splitGlobs = (text) => text.split(/[\s,]+/).filter(Boolean)

/** The ticked types and the typed globs, once each, ticked first. */
export function chosenEventTypes(typesBox, globsInput) {
  const ticked = [...typesBox.querySelectorAll('input[type=checkbox]:checked')].map((c) => c.value)
  const typed = splitGlobs(globsInput.value)
  return { eventTypes: [...new Set([...ticked, ...typed])], typed }
}

/** The control a problem's field names: `url`, `description`, or `event_types.<i>` (ticked or typed). */
export function controlForField(field, eventTypes, typed, controls) {
  if (field === 'url') return controls.url
  if (field === 'description') return controls.description
  const m = /^event_types(?:\.(\d+))?$/.exec(field ?? '')
  if (!m) return null
  const value = m[1] === undefined ? undefined : eventTypes[Number(m[1])]
  return value !== undefined && typed.includes(value) ? controls.globs : controls.typesFieldset
}

/** An event type that may wrap after its dots and underscores, never inside a word. */
const typeName = (type) =>
  h(
    'code',
    {},
    type.split(/(?<=[._])/).flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part])),
  )

/** Groups in reading order: `core` (tests, corpus notes) first, then A to Z. */
const groupOrder = (a, b) => (a === 'core' ? -1 : b === 'core' ? 1 : a.localeCompare(b))

/** Checkboxes for the webhook-visible types, grouped as the catalog groups them; `checked` ones ticked. */
export function eventTypeGroups(types, checked = []) {
  const groups = new Map()
  for (const t of types) {
    const group = t.group || 'other'
    if (!groups.has(group)) groups.set(group, [])
    groups.get(group).push(t)
  }
  return [...groups]
    .sort(([a], [b]) => groupOrder(a, b))
    .map(([group, list]) =>
      h(
        'fieldset',
        { class: 'type-group' },
        h('legend', {}, group),
        list.map((t) => {
          const id = uid('type')
          return h(
            'div',
            { class: 'check' },
            h('input', { type: 'checkbox', id, name: 'event_types', value: t.type, checked: checked.includes(t.type) }),
            h(
              'label',
              { for: id },
              typeName(t.type),
              t.description ? h('span', { class: 'muted small block' }, t.description) : null,
            ),
          )
        }),
      ),
    )
}
