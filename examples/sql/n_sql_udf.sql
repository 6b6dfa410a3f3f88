-- Scenario n: functions written in Lua (n_sql_udf_fns.lua) in a windowed aggregation: the top
-- bid and the spread of the bids (largest - smallest) per auction and 5-second window, in dollars.
-- Run: build/wmrun --sql examples/sql/n_sql_udf.sql
SET 'pipeline.auto-watermark-interval' = '0';

CREATE FUNCTION dollars AS 'n_sql_udf_fns.dollars' LANGUAGE LUA;
CREATE FUNCTION spread AS 'n_sql_udf_fns.spread' LANGUAGE LUA;

CREATE TABLE bids (
  auction INT,
  bidder STRING,
  price INT,  -- cents
  ts BIGINT,
  rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'n_sql_bids.csv', 'format' = 'csv');

SELECT auction, dollars(MAX(price)) AS top, dollars(spread(price)) AS spread, window_start
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(rt), INTERVAL '5' SECOND))
GROUP BY window_start, window_end, auction;
