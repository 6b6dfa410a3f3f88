
CREATE TABLE s (id STRING, ms BIGINT, vc INT, rt AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
