-- Scenario r: an interval join (Flink SQL's), each order with the shipments that left within
-- 4 hours after it: o.order_time BETWEEN s.ship_time - 4 h AND s.ship_time, by order id.
-- Run: build/wmrun --sql examples/sql/r_sql_interval_join.sql
--
-- Worked out by hand (times from 1970-01-01 00:00, the ship time minus the order time):
--   order 2 (lamp, 00:30), shipped by ups at 01:00: 30 min           -> joined
--   order 4 (pen, 02:00), shipped by fedex at 02:00: 0 (lower edge)  -> joined
--   shipment of order 5 (ups, 02:01:40): no order 5                  -> nothing
--   order 1 (book, 00:00), shipped by dhl at 04:00: 4 h (upper edge) -> joined
--   order 3 (desk, 01:00), shipped by dhl at 05:00:00.001: 4 h 1 ms  -> nothing
-- Both time attributes stay in the result (order_time, ship_time). The rows come as the pairs
-- meet: their order depends on how the two files' rows interleave (spec/examples_spec.lua
-- compares the lines of a join example sorted).
SET 'pipeline.auto-watermark-interval' = '0';

CREATE TABLE orders (id INT, product STRING, ms BIGINT,
  order_time AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR order_time AS order_time - INTERVAL '1' MINUTE)
  WITH ('connector' = 'filesystem', 'path' = 'r_sql_orders.csv', 'format' = 'csv');

CREATE TABLE shipments (order_id INT, carrier STRING, ms BIGINT,
  ship_time AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ship_time AS ship_time - INTERVAL '1' MINUTE)
  WITH ('connector' = 'filesystem', 'path' = 'r_sql_shipments.csv', 'format' = 'csv');

SELECT o.id, o.product, s.carrier, o.order_time, s.ship_time
FROM orders o, shipments s
WHERE o.id = s.order_id
  AND o.order_time BETWEEN s.ship_time - INTERVAL '4' HOUR AND s.ship_time;
