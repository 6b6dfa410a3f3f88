-- Scenario l: a filter over lines `id,name,age`: an append-only result (+I rows only).
-- Run: build/wmrun --sql examples/sql/l_sql_filter.sql

CREATE TABLE users (id INT, name STRING, age INT)
  WITH ('connector' = 'filesystem', 'path' = 'l_sql_filter.csv', 'format' = 'csv');

SELECT * FROM users WHERE age > 20;
