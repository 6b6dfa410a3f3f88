
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE s (id STRING, ms BIGINT, vc INT,
  rt AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = 's.csv', 'format' = 'csv');
