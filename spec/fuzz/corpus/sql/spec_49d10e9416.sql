CREATE TABLE n (id STRING, ms BIGINT NOT NULL, vc INT NOT NULL,
        rt AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT id, SUM(vc) FROM n GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id HAVING SUM(vc) > 2;