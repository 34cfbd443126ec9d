export { createPublisher, publish, publishMany, type Publisher, type PublisherOptions, type PublishOutcome } from './publisher.js'
export type { EventToPublish } from './event-prepare.js'
export { PublishError } from './publish-error.js'
export type { KyselyTransactionLike, PgTransactionClient, PublishTransaction } from './transaction-handle.js'
