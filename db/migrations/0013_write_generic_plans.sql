-- 0013 the write function plans its statements once per connection.
--
-- PL/pgSQL caches a plan per statement, but for the first five calls it plans with the call's
-- values, and keeps doing so whenever the plan for any value looks cheaper than that average.
-- hookledger_write's statements take arrays built from its jsonb argument, so every plan for
-- given values looked cheaper, and each call planned every statement again: with the few rows a
-- call carries at a steady rate, planning was about half of the write's database time
-- (`npm run bench -- --only=latency --stats`: the endpoint queue's upsert 0.77 ms to plan and
-- 0.14 ms to run; a write 3.1–3.2 ms a call, a claim's 3.5–3.7 ms).
--
-- Every statement in it reaches rows by key (ids, endpoint ids, the positions it inserts), so
-- the plan does not depend on the values: a generic plan is the plan. With it a write took
-- 1.7–1.8 ms a call and a claim's 1.8–2.0 ms in the same bench, and publish → arrival p50 fell
-- from 27–35 ms to 23–25 ms.
--
-- A generic plan is made again whenever a table it reads is analyzed; the statistics refresh
-- (0012) runs after the first thousand changes of a new installation's tables (the service's
-- STATISTICS_REFRESH_MIN_CHANGES), so plans made on empty tables do not outlive them.

alter function hookledger_write(text, jsonb) set plan_cache_mode = force_generic_plan;
