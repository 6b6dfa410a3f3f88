
      CREATE TABLE p (name STRING, age INT) WITH ('connector' = 'filesystem', 'path' = 'p.csv', 'format' = 'csv');
      SELECT name, age + 1, age > 20, name LIKE 'z%', CHAR_LENGTH(name), SUBSTRING(name, 2, 3),
             LOWER(CONCAT(name, '-', 'X')), age IS NULL, age IN (18, 25), age BETWEEN 19 AND 30,
             COALESCE(age, -1), age > 20 OR name = 'lisi'
      FROM p;