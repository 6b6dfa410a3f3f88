-- Scenario s: an event-time temporal join (Flink SQL's): each order with the exchange rate of
-- its currency valid at the order's time, from a versioned table (a PRIMARY KEY and a
-- WATERMARK: each row a new rate of its currency from its time on).
-- Run: build/wmrun --sql examples/sql/s_sql_temporal_join.sql
--
-- Worked out by hand (times in seconds; rates: EUR 1.0 from 1, GBP 2.0 from 2, EUR 1.1 from 5,
-- EUR 1.2 from 9; the rate valid at t is the latest at or before t):
--   order 1 EUR at 0.5: no EUR rate yet          -> nothing (an inner join)
--   order 2 EUR at 1: the rate of 1 (at or before) -> 1.0
--   order 3 GBP at 3                              -> 2.0
--   order 4 EUR at 6                              -> 1.1
--   order 5 EUR at 9                              -> 1.2
--   order 6 USD at 9.5: no USD rate               -> nothing
-- An order waits for the watermark (the minimum of both files') to reach its time, so the
-- result does not depend on how the two files' rows interleave (their order does: the spec
-- compares a join example's lines sorted).
SET 'pipeline.auto-watermark-interval' = '0';

CREATE TABLE orders (id INT, cur STRING, ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = 's_sql_orders.csv', 'format' = 'csv');

CREATE TABLE rates (cur STRING, rate DOUBLE, ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts, PRIMARY KEY (cur) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = 's_sql_rates.csv', 'format' = 'csv');

SELECT o.id, o.cur, r.rate
FROM orders o
JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur;
