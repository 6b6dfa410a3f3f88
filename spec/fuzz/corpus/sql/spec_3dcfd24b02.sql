
      CREATE TABLE c (id STRING, n INT) WITH ('connector' = 'filesystem', 'path' = 'c.txt', 'format' = 'csv',
        'csv.field-delimiter' = ';', 'csv.ignore-parse-errors' = 'true');
      SELECT * FROM c;