import { spawnSync } from 'node:child_process'
import { constants, createReadStream, createWriteStream } from 'node:fs'
import {
  access,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { createBrotliDecompress } from 'node:zlib'

/** Where the browser came from, in the order they are tried. */
export type ChromiumSource = 'CHROMIUM_PATH' | 'system' | 'npm'

/** What to hand to playwright-core's `chromium.launch()`. */
export interface ResolvedChromium {
  readonly executablePath: string
  readonly args: string[]
  readonly headless: true
  /**
   * The browser's whole environment when it needs more than this process's (the npm build: its
   * fonts.conf, and on a system without NSS/NSPR/expat the copies the package ships); otherwise
   * undefined, and Playwright passes `process.env` as usual.
   */
  readonly env: Record<string, string> | undefined
  readonly source: ChromiumSource
}

/** Installed browsers looked for when `CHROMIUM_PATH` names none: this path, then these on PATH. */
const SYSTEM_PATH = '/usr/bin/chromium'
const PATH_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']

/** Flags for every browser: nothing calls home, nothing needs a GPU. */
const COMMON_ARGS = [
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/**
 * `@sparticuz/chromium`'s recommended flags that are left out, each for a reason seen in a run:
 * - `--single-process`: the second `browser.newContext()` fails ("Target page, context or browser
 *   has been closed"), and these tests open one context per case.
 * - `--disable-web-security`, `--allow-running-insecure-content`: the UI under test must meet
 *   the same CORS/mixed-content rules as in a real browser (and as with the system one).
 * - `--disable-features=…`, `--enable-features=…`: Chromium keeps only the last occurrence of a
 *   switch, so these would silently replace the feature lists Playwright itself passes.
 * - `--headless='shell'`: Playwright passes `--headless`; the build is headless-only anyway.
 */
const SPARTICUZ_DROPPED = [
  '--single-process',
  '--disable-web-security',
  '--allow-running-insecure-content',
  '--disable-features=',
  '--enable-features=',
  '--headless=',
]

const isRoot = (): boolean => process.getuid?.() === 0

function commonArgs(): string[] {
  return [...(isRoot() ? ['--no-sandbox'] : []), ...COMMON_ARGS]
}

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false
    await access(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}

async function findSystemChromium(): Promise<string | null> {
  if (await isExecutableFile(SYSTEM_PATH)) return SYSTEM_PATH
  const dirs = (process.env['PATH'] ?? '').split(path.delimiter).filter((d) => d !== '')
  for (const name of PATH_NAMES) {
    for (const dir of dirs) {
      const candidate = path.join(dir, name)
      if (await isExecutableFile(candidate)) return candidate
    }
  }
  return null
}

/**
 * The browser for tests: `CHROMIUM_PATH` if it names an executable file, else an installed
 * Chromium/Chrome, else the Chromium shipped (brotli-compressed) inside `@sparticuz/chromium`,
 * extracted once per user and package version (see `extractNpmChromium`). The npm package is
 * only loaded when no browser is installed.
 */
export async function resolveChromium(): Promise<ResolvedChromium> {
  const installed = (executablePath: string, source: ChromiumSource): ResolvedChromium => ({
    executablePath,
    args: commonArgs(),
    headless: true,
    env: undefined,
    source,
  })
  const fromEnv = process.env['CHROMIUM_PATH']
  if (fromEnv) {
    if (await isExecutableFile(fromEnv)) return installed(fromEnv, 'CHROMIUM_PATH')
    process.emitWarning(`CHROMIUM_PATH=${fromEnv} is not an executable file; looking elsewhere`)
  }
  const system = await findSystemChromium()
  if (system) return installed(system, 'system')
  const npm = await npmChromium()
  return {
    executablePath: npm.executablePath,
    args: [...commonArgs(), ...npm.args.filter((a) => !commonArgs().includes(a))],
    headless: true,
    env: npm.env,
    source: 'npm',
  }
}

// ---------------------------------------------------------------------------------------------
// The npm build

interface NpmChromium {
  executablePath: string
  args: string[]
  env: Record<string, string>
}

/** One extraction (or cache check) per process, however many callers. */
let npmPromise: Promise<NpmChromium> | undefined

function npmChromium(): Promise<NpmChromium> {
  npmPromise ??= loadNpmChromium().catch((err: unknown) => {
    npmPromise = undefined
    throw err
  })
  return npmPromise
}

const COMPLETE = '.hookledger-complete'
const AL2023_ERROR = 'al2023-unpack-error.txt'

async function loadNpmChromium(): Promise<NpmChromium> {
  const { default: sparticuz } = await import('@sparticuz/chromium')
  // Only drops the WebGL flags (`--use-angle=swiftshader …` become `--disable-webgl`): the
  // SwiftShader/ANGLE libraries are still extracted and still needed, `--in-process-gpu` loads
  // libGLESv2.so at start-up and the browser exits without it.
  sparticuz.setGraphicsMode = false
  const pkgDir = path.resolve(
    path.dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')),
    '..',
    '..',
  )
  const { version } = JSON.parse(await readFile(path.join(pkgDir, 'package.json'), 'utf8')) as {
    version: string
  }
  const dir = await extractNpmChromium(sparticuz, pkgDir, version)
  const executablePath = path.join(dir, 'chromium')
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v
  // The build links its own fontconfig, which reads /etc/fonts (absent on a bare system: no
  // fonts at all). This file keeps the system's configuration and adds the Open Sans it ships.
  env['FONTCONFIG_FILE'] = path.join(dir, 'fonts.conf')
  const missing = missingLibraries(executablePath, env)
  if (missing.length > 0) {
    // NSS, NSPR and expat are not on a bare Debian/Ubuntu; the package ships copies (built for
    // Amazon Linux 2023, glibc 2.34) that it only unpacks on Lambda. Use them for what's missing.
    const libDir = path.join(dir, 'al2023', 'lib')
    const inherited = (env['LD_LIBRARY_PATH'] ?? '').split(':').filter(Boolean)
    env['LD_LIBRARY_PATH'] = [libDir, ...inherited].join(':')
    const still = missingLibraries(executablePath, env)
    if (still.length > 0) {
      const why = await readFile(path.join(dir, AL2023_ERROR), 'utf8').catch(() => '')
      throw new Error(
        `${executablePath} needs shared libraries this system lacks: ${still.join(', ')} ` +
          `(Debian/Ubuntu: apt-get install -y libnss3 libnspr4 libexpat1)` +
          (why ? `; unpacking the bundled copies failed: ${why.trim()}` : ''),
      )
    }
  }
  // Not root: no forced --no-sandbox (as for the other browsers), and so no --no-zygote either,
  // which Chromium refuses with the sandbox on (`chromiumSandbox: true` then works).
  const dropped = isRoot()
    ? SPARTICUZ_DROPPED
    : [...SPARTICUZ_DROPPED, '--no-sandbox', '--no-zygote']
  const args = sparticuz.args.filter(
    (a) => !dropped.some((d) => a === d || (d.endsWith('=') && a.startsWith(d))),
  )
  return { executablePath, args, env }
}

/** Library names `ldd` reports "not found" for; [] when ldd is missing (the launch will tell). */
function missingLibraries(executable: string, env: Record<string, string>): string[] {
  const run = spawnSync('ldd', [executable], { env, encoding: 'utf8' })
  if (run.error || typeof run.stdout !== 'string') return []
  return [...run.stdout.matchAll(/^\s*(\S+)\s+=>\s+not found/gm)].map((m) => m[1]!)
}

interface Sparticuz {
  executablePath(input?: string): Promise<string>
}

/**
 * Unpacks the npm build into `<tmpdir>/hookledger-chromium-<version>-<uid>/` (mode 0700), or
 * reuses a complete earlier unpacking there.
 *
 * The package's own `executablePath()` is not used as is: it writes into the shared tmpdir and
 * trusts any existing `<tmpdir>/chromium`, so a second process calling it during the first one's
 * extraction (two vitest workers) gets a half-written binary (or no libGLESv2.so yet), a crashed
 * extraction is reused forever, another version's or another user's (0700, root-owned) binary
 * is picked up as well. Here each process unpacks into a private `…partial-*` directory (the
 * package's code, pointed there through TMPDIR), marks it complete and renames it into place: a
 * rename is atomic, so the first complete one wins and losers delete theirs.
 */
async function extractNpmChromium(
  sparticuz: Sparticuz,
  pkgDir: string,
  version: string,
): Promise<string> {
  const base = tmpdir()
  const uid = process.getuid?.() ?? 0
  const name = `hookledger-chromium-${version}-${uid}`
  const final = path.join(base, name)
  if (await isComplete(final, uid)) return final
  await removeStalePartials(base, name)

  const staging = await mkdtemp(path.join(base, `${name}.partial-`))
  try {
    // executablePath() reads os.tmpdir() only before its first await (where it checks for an
    // earlier binary and starts every inflate), so TMPDIR is ours for exactly that window.
    const savedTmpdir = process.env['TMPDIR']
    process.env['TMPDIR'] = staging
    let extracted: Promise<string>
    try {
      extracted = sparticuz.executablePath(path.join(pkgDir, 'bin'))
    } finally {
      if (savedTmpdir === undefined) delete process.env['TMPDIR']
      else process.env['TMPDIR'] = savedTmpdir
    }
    const exe = await extracted
    if (exe !== path.join(staging, 'chromium')) {
      throw new Error(
        `@sparticuz/chromium extracted to ${exe}, not into ${staging}: its tmpdir handling changed`,
      )
    }
    for (const required of ['chromium', 'libGLESv2.so', 'libEGL.so', 'fonts']) {
      await access(path.join(staging, required))
    }
    await access(exe, constants.X_OK)
    // Only used where ldd finds libraries missing (see loadNpmChromium); without tar, that case
    // ends in an error naming them.
    await unpackTar(path.join(pkgDir, 'bin', 'al2023.tar.br'), path.join(staging, 'al2023')).catch(
      async (err: unknown) => {
        await rm(path.join(staging, 'al2023'), { recursive: true, force: true })
        await writeFile(path.join(staging, AL2023_ERROR), `${String(err)}\n`)
      },
    )
    await writeFile(
      path.join(staging, 'fonts.conf'),
      [
        '<?xml version="1.0"?>',
        '<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">',
        '<fontconfig>',
        '  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>',
        `  <dir>${path.join(final, 'fonts')}</dir>`,
        `  <cachedir>${path.join(final, 'fontconfig-cache')}</cachedir>`,
        '</fontconfig>',
        '',
      ].join('\n'),
    )
    const marker = JSON.stringify({ version, pid: process.pid })
    await writeFile(path.join(staging, COMPLETE), `${marker}\n`)
    for (let attempt = 0; ; attempt++) {
      try {
        await rename(staging, final)
        return final
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err
        // Another process finished first: use its copy.
        if (await isComplete(final, uid)) return final
        // A directory without the marker was not put there by this code: replace it if it is
        // this user's own and private, else refuse.
        if (attempt > 0 || !(await ownedPrivateDir(final, uid))) {
          throw new Error(`${final} exists and is not a complete extraction owned by uid ${uid}`)
        }
        await rm(final, { recursive: true, force: true })
      }
    }
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
}

/** Is `dir` a real directory (no symlink) of this uid that nobody else can write to? */
async function ownedPrivateDir(dir: string, uid: number): Promise<boolean> {
  try {
    const st = await lstat(dir)
    return st.isDirectory() && st.uid === uid && (st.mode & 0o022) === 0
  } catch {
    return false
  }
}

async function isComplete(dir: string, uid: number): Promise<boolean> {
  if (!(await ownedPrivateDir(dir, uid))) return false
  try {
    await access(path.join(dir, COMPLETE))
    return true
  } catch {
    return false
  }
}

/** Partial directories of killed processes (an extraction takes seconds: 10 minutes is plenty). */
async function removeStalePartials(base: string, name: string): Promise<void> {
  const cutoff = Date.now() - 10 * 60_000
  for (const entry of await readdir(base).catch(() => [] as string[])) {
    if (!entry.startsWith(`${name}.partial-`)) continue
    const dir = path.join(base, entry)
    try {
      if ((await lstat(dir)).mtimeMs < cutoff) await rm(dir, { recursive: true, force: true })
    } catch {
      // Gone already, or not ours.
    }
  }
}

/** Unpacks a brotli-compressed tarball with the system's tar (Essential on Debian/Ubuntu). */
async function unpackTar(archive: string, into: string): Promise<void> {
  await mkdir(into, { recursive: true })
  // Through a file, not a pipe: tar stops reading at the end-of-archive blocks and the rest of
  // the stream then fails with ERR_STREAM_PREMATURE_CLOSE (seen in one run out of two).
  const tarball = `${into}.tar`
  try {
    await pipeline(createReadStream(archive), createBrotliDecompress(), createWriteStream(tarball))
    const run = spawnSync('tar', ['-x', '--no-same-owner', '-f', tarball, '-C', into], {
      encoding: 'utf8',
    })
    if (run.error) throw run.error
    if (run.status !== 0) {
      throw new Error(`tar -x ${archive} exited ${run.status}: ${run.stderr.trim()}`)
    }
  } finally {
    await rm(tarball, { force: true })
  }
}
