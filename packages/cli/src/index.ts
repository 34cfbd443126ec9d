export * from './commands.js'
export * from './ledger-chain-commands.js'
