
      CREATE TABLE j (id STRING, n BIGINT, ok BOOLEAN) WITH ('connector' = 'filesystem', 'path' = 'j.json',
        'format' = 'json');
      CREATE TABLE c (id STRING, n INT) WITH ('connector' = 'filesystem', 'path' = 'c.txt', 'format' = 'csv',
        'csv.field-delimiter' = ';', 'csv.ignore-parse-errors' = 'true');
      SELECT * FROM j;
    