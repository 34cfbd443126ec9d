export * from './config.js'
export * from './service.js'
export * from './main.js'
export * from './startup-error.js'
