#!/usr/bin/env node
// The CommonJS half of a published dual package (docs/publishing.md). `tsc -b` writes the ESM
// build (dist/*.js + dist/*.d.ts); this writes dist/cjs/ beside it for `require`: each source
// transpiled on its own to CommonJS (the sources are isolatedModules-clean, so no type
// information is needed), the same declarations copied, and a dist/cjs/package.json saying
// "type": "commonjs", so Node and TypeScript (node16) read both as CommonJS. Node 20 cannot be
// counted on to require() an ES module, and TypeScript's node16 refuses it: CJS apps need this.
//
// Usage: node scripts/build-cjs.mjs [package dir …]   (default: the current directory; after tsc -b)
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

const COMPILER_OPTIONS = {
  module: ts.ModuleKind.CommonJS,
  target: ts.ScriptTarget.ES2022,
  esModuleInterop: true,
  isolatedModules: true,
  sourceMap: true,
}

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name)
    if (statSync(p).isDirectory()) yield* walk(p)
    else yield p
  }
}

const isSpec = (file) => /\.spec\.(ts|d\.ts)$/.test(file)

function buildCjs(packageDir) {
  const src = path.join(packageDir, 'src')
  const dist = path.join(packageDir, 'dist')
  const out = path.join(dist, 'cjs')
  if (!existsSync(path.join(dist, 'index.d.ts'))) throw new Error(`${dist}/index.d.ts is missing: run tsc -b first`)
  rmSync(out, { recursive: true, force: true })
  let count = 0
  for (const file of walk(src)) {
    if (!file.endsWith('.ts') || file.endsWith('.d.ts') || isSpec(file)) continue
    const rel = path.relative(src, file).replace(/\.ts$/, '.js')
    const target = path.join(out, rel)
    const result = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: COMPILER_OPTIONS, fileName: file, reportDiagnostics: true })
    if (result.diagnostics?.length) {
      throw new Error(ts.formatDiagnostics(result.diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => packageDir, getNewLine: () => '\n' }))
    }
    const map = JSON.parse(result.sourceMapText)
    map.file = path.basename(target)
    map.sources = [path.relative(path.dirname(target), file).split(path.sep).join('/')]
    mkdirSync(path.dirname(target), { recursive: true })
    writeFileSync(target, result.outputText.replace(/\/\/# sourceMappingURL=.*$/m, `//# sourceMappingURL=${path.basename(target)}.map`))
    writeFileSync(`${target}.map`, JSON.stringify(map))
    count++
  }
  // The declarations tsc wrote for the ESM build describe the CJS one too (named exports only:
  // none of these packages has a default export), read as CommonJS under the marker below.
  for (const file of walk(dist)) {
    if (file.startsWith(out + path.sep) || !file.endsWith('.d.ts') || isSpec(file)) continue
    const target = path.join(out, path.relative(dist, file))
    mkdirSync(path.dirname(target), { recursive: true })
    copyFileSync(file, target)
  }
  writeFileSync(path.join(out, 'package.json'), JSON.stringify({ type: 'commonjs' }) + '\n')
  console.log(`${path.relative(process.cwd(), out) || out}: ${count} CommonJS modules`)
}

const dirs = process.argv.slice(2)
for (const dir of dirs.length > 0 ? dirs : ['.']) buildCjs(path.resolve(dir))
