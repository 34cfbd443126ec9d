// What the admin UI's readability tests measure in the browser, and the arithmetic on it in
// Node: sideways overflow (and who causes it), text sizes, selects inside their cards, how a
// URL wraps, and the WCAG contrast of each state badge and outcome label against the
// background it is actually drawn on. The browser side is plain script text (the tests'
// tsconfig has no DOM), evaluated in the page.
import type { Page } from 'playwright-core'

/** The page's overflow: document widths, table wraps that scroll, and the elements past the edge. */
export interface OverflowReport {
  readonly scrollWidth: number
  readonly clientWidth: number
  /** `.table-wrap`s whose table is wider than they are (it scrolls inside them). */
  readonly scrollingTables: string[]
  /** Up to 8 elements reaching past the viewport's right edge (unclipped), outermost first. */
  readonly offenders: string[]
}

const DESCRIBE = `const describe = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\\s+/).join('.') : '')`

export function overflowReport(page: Page): Promise<OverflowReport> {
  return page.evaluate(`(() => {
    ${DESCRIBE}
    const de = document.documentElement
    const width = de.clientWidth
    // Past the edge and not clipped or scrolled by an ancestor (which would keep it off the page).
    const clipped = (el) => { for (let n = el.parentElement; n && n !== document.body; n = n.parentElement) if (getComputedStyle(n).overflowX !== 'visible') return true; return false }
    const offenders = [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > width + 0.5 && !clipped(el))
      .filter((el, _, all) => !all.includes(el.parentElement))
      .slice(0, 8)
      .map((el) => describe(el) + ' right=' + Math.round(el.getBoundingClientRect().right))
    const scrollingTables = [...document.querySelectorAll('.table-wrap')]
      .filter((w) => w.scrollWidth > w.clientWidth + 0.5)
      .map((w) => describe(w.querySelector('table') ?? w) + ' ' + w.scrollWidth + '>' + w.clientWidth)
    return { scrollWidth: de.scrollWidth, clientWidth: width, scrollingTables, offenders }
  })()`)
}

/** What people must be able to read: text smaller than 11 px, SVG text, selects out of their box. */
export interface ReadabilityReport {
  readonly smallText: string[]
  readonly svgText: number
  readonly selectsOutside: string[]
  /** `.truncate` and `.clamp` elements whose title is not their whole text. */
  readonly truncatedWithoutTitle: string[]
}

export function readabilityReport(page: Page): Promise<ReadabilityReport> {
  return page.evaluate(`(() => {
    ${DESCRIBE}
    const visible = (el) => { const r = el.getBoundingClientRect(); return r.width > 1 && r.height > 1 && !el.closest('.visually-hidden, [hidden], details:not([open]) > :not(summary)') }
    const ownText = (el) => [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== '')
    const smallText = [...document.querySelectorAll('body *')]
      .filter((el) => !(el instanceof SVGElement) && ownText(el) && visible(el) && parseFloat(getComputedStyle(el).fontSize) < 11)
      .map((el) => describe(el) + ' ' + getComputedStyle(el).fontSize + ' "' + el.textContent.trim().slice(0, 30) + '"')
    const selectsOutside = [...document.querySelectorAll('main select')].filter(visible).flatMap((s) => {
      const box = s.closest('.card') ?? s.closest('form') ?? s.closest('section') ?? document.querySelector('main')
      const r = s.getBoundingClientRect(), b = box.getBoundingClientRect()
      return r.right > b.right + 0.5 || r.left < b.left - 0.5 ? [describe(s) + ' in ' + describe(box) + ': ' + Math.round(r.left) + '–' + Math.round(r.right) + ' vs ' + Math.round(b.left) + '–' + Math.round(b.right)] : []
    })
    const truncatedWithoutTitle = [...document.querySelectorAll('.truncate, .clamp')].filter((el) => el.title !== el.textContent).map(describe)
    return { smallText, svgText: document.querySelectorAll('main svg text').length, selectsOutside, truncatedWithoutTitle }
  })()`)
}

/**
 * Characters per rendered line of each element matching `selector` (a URL broken every 2–3
 * characters reads as a column of fragments).
 */
export function charactersPerLine(page: Page, selector: string): Promise<{ text: string; perLine: number }[]> {
  return page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})].map((el) => {
    const lines = [...el.getClientRects()].length > 1 ? el.getClientRects().length : Math.max(1, Math.round(el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight)))
    return { text: el.textContent, perLine: el.textContent.length / lines }
  })`)
}

type Rgba = readonly [number, number, number, number]

/** One coloured word: its text colour and the backgrounds under it, innermost first. */
interface Swatch {
  readonly label: string
  readonly color: string
  readonly backgrounds: string[]
}

/**
 * Every `.badge` and `.outcome` in the page as drawn, plus one of each given class put beside
 * the first real one of its kind (same cell, same row background), so that every state and
 * outcome is measured where it would really appear, whether or not the data has one now.
 */
export async function colouredWords(page: Page, samples: { badge: string[]; outcome: string[] }): Promise<Swatch[]> {
  return page.evaluate(`(() => {
    const samples = ${JSON.stringify(samples)}
    for (const [kind, names] of Object.entries(samples)) {
      const host = document.querySelector('main .' + kind)?.parentElement
      if (!host) continue
      for (const name of names) {
        const span = document.createElement('span')
        span.className = kind + ' ' + kind + '-' + name
        span.dataset.sample = ''
        span.textContent = name
        host.append(' ', span)
      }
    }
    const swatches = [...document.querySelectorAll('main .badge, main .outcome')].map((el) => {
      const backgrounds = []
      for (let n = el; n; n = n.parentElement) backgrounds.push(getComputedStyle(n).backgroundColor)
      return { label: el.className + ' "' + el.textContent + '"', color: getComputedStyle(el).color, backgrounds }
    })
    for (const s of document.querySelectorAll('[data-sample]')) s.remove()
    return swatches
  })()`)
}

const parse = (css: string): Rgba => {
  const [r = 0, g = 0, b = 0, a = 1] = (css.match(/[\d.]+/g) ?? []).map(Number)
  return [r, g, b, a]
}

/** `top` drawn over an opaque `bottom`. */
const over = (top: Rgba, bottom: Rgba): Rgba => {
  const a = top[3]
  return [top[0] * a + bottom[0] * (1 - a), top[1] * a + bottom[1] * (1 - a), top[2] * a + bottom[2] * (1 - a), 1]
}

const luminance = ([r, g, b]: Rgba): number => {
  const lin = (v: number) => {
    const c = v / 255
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
}

/** WCAG 2 contrast ratio of the word against everything under it, composited over white. */
export function contrastRatio(swatch: Swatch): number {
  let background: Rgba = [255, 255, 255, 1]
  for (const layer of [...swatch.backgrounds].reverse()) background = over(parse(layer), background)
  const fg = over(parse(swatch.color), background)
  const [hi, lo] = [luminance(fg), luminance(background)].sort((x, y) => y - x) as [number, number]
  return (hi + 0.05) / (lo + 0.05)
}
