
      CREATE TABLE words (word STRING, ts BIGINT NOT NULL, rt AS TO_TIMESTAMP_LTZ(ts, 3),
        WATERMARK FOR rt AS rt - INTERVAL '5' SECOND)
      WITH ('connector' = 'filesystem', 'path' = 'w.csv', 'format' = 'csv');