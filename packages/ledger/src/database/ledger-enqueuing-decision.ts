import { sql, type RawBuilder } from 'kysely'

/**
 * The ledger row that enqueued a delivery in ledger format 3: its event's `fanout.decided`
 * naming its endpoint among those it matched (core fanout-enqueues.ts), which names the delivery
 * only through its pair. The pair comes from the delivery's origin row or, once it is retired,
 * from its own rows. `columns` are the ledger's, unqualified; `filter` further conditions
 * (`and …`). What a delivery's receipt and audit trail add to the rows that name it.
 */
export const enqueuingDecisionRows = (columns: RawBuilder<unknown>, deliveryId: string, filter: RawBuilder<unknown> = sql``): RawBuilder<unknown> => sql`
  select ${columns} from ledger, (
    select o.endpoint_id as pair_endpoint_id, o.event_id as pair_event_id, o.owner_id as pair_owner_id
    from delivery_origins o where o.id = ${deliveryId}::uuid
    union all
    (select l.endpoint_id, l.event_id, l.owner_id from ledger l
     where l.delivery_id = ${deliveryId}::uuid and l.endpoint_id is not null and l.event_id is not null limit 1)
    limit 1
  ) pair
  where kind = 'fanout.decided' and event_id = pair_event_id and owner_id = pair_owner_id
    and payload -> 'enqueues' = 'true' and payload -> 'matched' ? pair_endpoint_id::text ${filter}
`
