-- Benchmark: scenario k's query (counts per key per 5 s tumbling window) over the benchmark
-- file made by bench/gen.c (lines `id,ts_ms,vc`). bench/sql.sh runs it against the
-- equivalent Lua fast-path job (bench/sql_lua.lua) and compares the counts and the times.
-- The path is relative to this script's folder: bench/sql.sh copies the script next to
-- the data (in $BENCH_DIR, never in the repository) and links the data as sql_tumble.csv.
-- Plan (EXPLAIN): read_lines -> parse_csv (C) -> watermarks with_timestamp_field("ts") (C)
-- -> key_by("id") (C) -> tumbling 5 s count() (C) -> a Lua map per window result -> print.

CREATE TABLE readings (
  id STRING,
  ts BIGINT,
  vc INT,
  rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'sql_tumble.csv', 'format' = 'csv');

SELECT id, COUNT(*) AS cnt,
       TUMBLE_START(rt, INTERVAL '5' SECOND) AS wstart,
       TUMBLE_END(rt, INTERVAL '5' SECOND) AS wend
FROM readings
GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id;
