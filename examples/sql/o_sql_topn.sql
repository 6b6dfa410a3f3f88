-- Scenario o: the two highest bids of every auction (Top-N), as a changelog: when a bid enters
-- the top, the ranks below it shift (-U the row a rank had, +U the row it has now).
-- Run: build/wmrun --sql examples/sql/o_sql_topn.sql
CREATE TABLE bids (auction INT, bidder STRING, price INT, ts BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'n_sql_bids.csv', 'format' = 'csv');

SELECT * FROM (
  SELECT auction, bidder, price,
         ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn
  FROM bids)
WHERE rn <= 2;
