
      CREATE TABLE c (id STRING, n INT) WITH ('connector' = 'filesystem', 'path' = 'c.csv', 'format' = 'csv');
      SELECT * FROM c;