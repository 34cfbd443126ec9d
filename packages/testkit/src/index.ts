export * from './test-database.js'
export * from './fake-clock.js'
export * from './test-receiver.js'
export * from './engine-harness.js'
