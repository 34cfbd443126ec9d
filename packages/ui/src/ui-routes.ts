import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Hono, type Context } from 'hono'

/** `packages/ui/assets/`: the shell, the ES modules and the stylesheet, served as they are. */
export const UI_ASSETS_DIR = fileURLToPath(new URL('../assets/', import.meta.url))

/** The file every `/ui/...` page answers with; the browser-side router picks the screen. */
const SHELL_FILE = 'index.html'

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
}

/**
 * The token lives in sessionStorage, so the pages allow no script, style or connection but
 * their own: injected markup could not run or send the token elsewhere.
 */
export const UI_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

interface Asset {
  readonly body: Uint8Array<ArrayBuffer>
  readonly contentType: string
  readonly etag: string
}

/**
 * Reads every file of the assets folder once, its subfolders too (served as `<folder>/<file>`,
 * so a screen's modules can have a folder of their own); a file the folder does not hold is
 * never served.
 */
function loadAssets(dir: string, prefix = '', assets = new Map<string, Asset>()): Map<string, Asset> {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name)
    if (statSync(file).isDirectory()) {
      loadAssets(file, `${prefix}${name}/`, assets)
      continue
    }
    const contentType = CONTENT_TYPES[path.extname(name)]
    if (!contentType) continue
    const body = new Uint8Array(readFileSync(file))
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
    assets.set(prefix + name, { body, contentType, etag })
  }
  return assets
}

/** Sends an asset; revalidated on every load (tiny files, and a deploy must show at once). */
function sendAsset(c: Context, asset: Asset): Response {
  const headers = { ...UI_SECURITY_HEADERS, etag: asset.etag, 'cache-control': 'no-cache' }
  if (c.req.header('if-none-match') === asset.etag) return c.body(null, 304, headers)
  return c.body(asset.body, 200, { ...headers, 'content-type': asset.contentType })
}

export interface UiRoutesOptions {
  /** Where the assets are read from; the package's own `assets/` unless a test says otherwise. */
  readonly assetsDir?: string
}

/**
 * The admin UI as a Hono sub-app: `GET /ui` and any `/ui/...` page answer the single-page
 * shell, `/ui/assets/<file>` the static files. It has no endpoints of its own: the browser
 * calls the same `/api/...` operations as every other client, with the user's bearer token.
 * Mount it with `app.route('/', createUiRoutes())`.
 */
export function createUiRoutes(options: UiRoutesOptions = {}): Hono {
  const assets = loadAssets(options.assetsDir ?? UI_ASSETS_DIR)
  const shell = assets.get(SHELL_FILE)
  if (!shell) throw new Error(`admin UI: ${SHELL_FILE} is missing from the assets folder`)
  const app = new Hono()

  app.get('/ui/assets/:name{.+}', (c) => {
    const asset = assets.get(c.req.param('name'))
    if (!asset) return c.text('not found', 404, UI_SECURITY_HEADERS)
    return sendAsset(c, asset)
  })
  app.get('/ui', (c) => sendAsset(c, shell))
  app.get('/ui/*', (c) => sendAsset(c, shell))
  return app
}
