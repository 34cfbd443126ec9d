export * from './ui-routes.js'
