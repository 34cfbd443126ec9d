export * from './commands.js'
export * from './ledger-chain-commands.js'
export * from './ledger-lifecycle-commands.js'
