
      CREATE TABLE out (id STRING, total INT) WITH ('connector' = 'print', 'print-identifier' = 'sums');
      CREATE TABLE f (id STRING, v INT) WITH ('connector' = 'filesystem', 'path' = 'out.csv', 'format' = 'csv');
      INSERT INTO out SELECT id, SUM(vc) FROM s GROUP BY TUMBLE(rt, INTERVAL '10' SECOND), id;
      INSERT INTO f SELECT id, vc FROM s WHERE vc > 4 UNION ALL SELECT 'const', 0 FROM s WHERE vc = 1;