import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ledgerReceipt, verifyLedgerReceipt, verifyRowTlogProof, type GivenLedgerKey, type LedgerReceipt, type ReceiptTrust, type TlogPolicy } from '@hookledger/ledger'
import type { Db } from '@hookledger/store'
import { UUID, type CliIo } from './commands.js'
import { INTACT, TAMPERED, UNPROVEN, USAGE } from './ledger-exit-codes.js'


/**
 * `ledger receipt --delivery ID --out DIR`: the delivery's receipt as files anyone can check —
 * one `<leaf index>.tlog-proof` per sealed row (a C2SP tlog-proof whose `extra` is the row's
 * canonical bytes) and `receipt.json` (the whole receipt, unsealed rows included). Exit 0 when
 * every row is proven, 3 when some are not sealed yet (written, listed, not proven), 1 when a
 * row sits in the sealed range without a checkpoint (it is listed in receipt.json as unprovable).
 */
export async function ledgerReceiptCommand(db: Db, io: CliIo, args: { delivery?: string | undefined; out?: string | undefined; json?: boolean | undefined }): Promise<number> {
  if (!args.delivery || !UUID.test(args.delivery)) {
    io.err(args.delivery ? `--delivery ${JSON.stringify(args.delivery)} is not a delivery id (a UUID)` : 'usage: hookledger ledger receipt --delivery ID --out DIR')
    return USAGE
  }
  if (!args.out) {
    io.err('--out DIR is required: the directory the .tlog-proof files are written to')
    return USAGE
  }
  const receipt = await ledgerReceipt(db, { delivery_id: args.delivery.toLowerCase() })
  if (!receipt) {
    io.err(`no ledger entries for delivery ${args.delivery}`)
    return USAGE
  }
  mkdirSync(args.out, { recursive: true })
  const written: string[] = []
  for (const entry of receipt.entries) {
    const file = path.join(args.out, `${entry.leaf_index}.tlog-proof`)
    writeFileSync(file, entry.tlog_proof)
    written.push(file)
  }
  writeFileSync(path.join(args.out, 'receipt.json'), JSON.stringify(receipt, null, 2) + '\n')
  if (args.json) {
    io.out(JSON.stringify({ delivery_id: receipt.delivery_id, origin: receipt.origin, tree_size: receipt.tree_size, files: written, unsealed: receipt.unsealed.length, unprovable: receipt.unprovable.length }))
  } else {
    io.out(`wrote ${written.length} .tlog-proof ${written.length === 1 ? 'file' : 'files'} and receipt.json to ${args.out} (tree of ${receipt.tree_size} rows, log ${receipt.origin ?? '-'})`)
    if (receipt.unsealed.length > 0) io.out(`${receipt.unsealed.length} ${receipt.unsealed.length === 1 ? 'row is' : 'rows are'} not sealed yet: listed in receipt.json, not proven`)
    for (const row of receipt.unprovable) io.out(`UNPROVABLE row ${row.position} (${row.kind}) sits inside the sealed range but no checkpoint sealed it`)
  }
  return receipt.unprovable.length > 0 ? TAMPERED : receipt.unsealed.length > 0 ? UNPROVEN : INTACT
}

/**
 * `ledger verify --receipt F`: F is a receipt (`receipt.json`, or the API's answer), one
 * `.tlog-proof` file, or a directory of them. Exit 0 when everything shown is proven, 3 when
 * nothing is wrong but some rows are not sealed yet, 1 when anything does not verify.
 */
export function verifyReceiptFile(io: CliIo, file: string, trusted: GivenLedgerKey, json: boolean | undefined, policy: TlogPolicy | null = null): number {
  let files: string[]
  try {
    files = statSync(file).isDirectory()
      ? readdirSync(file).filter((f) => f.endsWith('.tlog-proof')).sort().map((f) => path.join(file, f))
      : [file]
  } catch (err) {
    io.err(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    return USAGE
  }
  if (files.length === 0) {
    io.err(`${file} holds no .tlog-proof files`)
    return USAGE
  }
  const trust: ReceiptTrust = { publicKey: trusted.publicKey, origin: trusted.origin, policy }
  let text: string
  if (files.length === 1) {
    try {
      text = readFileSync(files[0]!, 'utf8')
    } catch (err) {
      io.err(`cannot read ${files[0]}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
      return USAGE
    }
    if (text.trimStart().startsWith('{')) return verifyReceiptJson(io, text, files[0]!, trust, json)
  }
  // One or more .tlog-proof files.
  const results = files.map((f) => ({ file: f, ...verifyRowTlogProof(readFileSync(f), trust) }))
  const ok = results.every((r) => r.ok)
  if (json) io.out(JSON.stringify({ ok, proven: results.filter((r) => r.ok).length, files: results.map(({ row, ...r }) => ({ ...r, position: row?.position ?? null, kind: row?.kind ?? null, delivery_id: row?.delivery_id ?? null })) }))
  else {
    for (const r of results) {
      io.out(r.ok ? `${r.file}: row ${r.row!.position} (${r.row!.kind}) is leaf ${r.index} of ${r.origin}'s signed tree of ${r.treeSize}` : `TAMPERED ${r.file}: ${r.problem}`)
    }
    io.out(ok ? `receipt intact: ${results.length} ${results.length === 1 ? 'row' : 'rows'} proven` : 'receipt does not verify')
  }
  return ok ? INTACT : TAMPERED
}

function verifyReceiptJson(io: CliIo, text: string, file: string, trust: ReceiptTrust, json: boolean | undefined): number {
  let receipt: LedgerReceipt
  try {
    receipt = JSON.parse(text) as LedgerReceipt
  } catch (err) {
    io.err(`cannot read ${file}: ${(err as Error).message}`)
    return USAGE
  }
  const result = verifyLedgerReceipt(receipt, trust)
  if (json) io.out(JSON.stringify(result))
  else {
    for (const p of result.problems) io.out(`TAMPERED ${p}`)
    if (!result.ok) io.out('receipt does not verify')
    else if (result.unsealed > 0) io.out(`receipt not proven whole: ${result.proven} ${result.proven === 1 ? 'entry' : 'entries'} proven, ${result.unsealed} not sealed yet (verify again after the next checkpoint)`)
    else io.out(`receipt intact: ${result.proven} ${result.proven === 1 ? 'entry' : 'entries'} proven against the log's signed checkpoint`)
  }
  return !result.ok ? TAMPERED : result.unsealed > 0 ? UNPROVEN : INTACT
}
