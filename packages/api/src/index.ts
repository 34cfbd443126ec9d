export * from './create-api.js'
export * from './openapi.js'
export * from './problem.js'
export * from './instrument-routes.js'
