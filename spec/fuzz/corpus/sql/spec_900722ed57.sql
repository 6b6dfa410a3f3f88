
      SET 'pipeline.auto-watermark-interval' = '0';
      CREATE TABLE w (k STRING, ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = 'w.csv', 'format' = 'csv');
      SELECT k, COUNT(*) FROM w GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), k;