-- Scenario k: counts per word per 5 s tumbling window, in SQL.
-- Lines are `word,millis`; rt is the event time; the watermark is max(rt) - 5 s (Flink SQL's
-- rule: the expression's value, no extra - 1 ms). Each window prints once when the watermark
-- reaches its last millisecond, or at the end of input: an append-only changelog (+I).
-- Run: build/wmrun --sql examples/sql/k_sql_tumble_count.sql

CREATE TABLE words (
  word STRING,
  ts BIGINT,
  rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'k_sql_tumble_count.csv', 'format' = 'csv');

SELECT word, COUNT(*) AS cnt,
       TUMBLE_START(rt, INTERVAL '5' SECOND) AS wstart,
       TUMBLE_END(rt, INTERVAL '5' SECOND) AS wend
FROM words
GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), word;
