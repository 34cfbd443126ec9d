export * from './dispatcher.js'
export * from './delivery-executor.js'
export * from './settle-batcher.js'
export * from './http-transport.js'
