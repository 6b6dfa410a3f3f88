CREATE TABLE s (ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR rt AS rt)
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT ms FROM s;