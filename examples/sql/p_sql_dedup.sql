-- Scenario p: deduplication, the last bid of every bidder (ORDER BY the time attribute DESC,
-- rn = 1): each newer bid retracts the bidder's previous one (-U) and adds itself (+U).
-- Run: build/wmrun --sql examples/sql/p_sql_dedup.sql
SET 'pipeline.auto-watermark-interval' = '0';

CREATE TABLE bids (auction INT, bidder STRING, price INT, ts BIGINT,
  rt AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'n_sql_bids.csv', 'format' = 'csv');

SELECT bidder, auction, price FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY rt DESC) AS rn FROM bids)
WHERE rn = 1;
