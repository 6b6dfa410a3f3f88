-- Benchmark: SQL aggregates in C against the Lua ones (docs/sql.md "Aggregates in C"): six
-- aggregates per key and 5 s tumbling window over the file of bench/gen.c (lines `id,ts_ms,vc`,
-- 10 000 keys), linked as sql_tumble.csv next to this script. Run it as bench/README.md
-- ("SQL aggregates in C") says, with and without WMRUN_SQL_AGG=lua.

CREATE TABLE readings (
  id STRING,
  ts BIGINT,
  vc INT,
  rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'sql_tumble.csv', 'format' = 'csv');

SELECT id, window_start, COUNT(*) AS cnt, SUM(vc) AS s, MIN(vc) AS mi, MAX(vc) AS ma, AVG(vc) AS av,
       COUNT(*) FILTER (WHERE vc >= 50) AS hi, COUNT(DISTINCT vc) AS dv
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(rt), INTERVAL '5' SECOND))
GROUP BY id, window_start, window_end;
