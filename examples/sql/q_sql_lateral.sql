-- Scenario q: a table function written in Lua (n_sql_udf_fns.lua): every bid of 70 cents or
-- more joined with the rows letters(bidder) emits for it, one per letter of the name.
-- Run: build/wmrun --sql examples/sql/q_sql_lateral.sql
CREATE FUNCTION letters AS 'n_sql_udf_fns.letters' LANGUAGE LUA;

CREATE TABLE bids (auction INT, bidder STRING, price INT, ts BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'n_sql_bids.csv', 'format' = 'csv');

SELECT auction, bidder, letter, pos
FROM bids, LATERAL TABLE(letters(bidder)) AS L(letter, pos)
WHERE auction = 2 AND price >= 70;
