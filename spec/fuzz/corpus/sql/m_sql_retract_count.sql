-- Scenario m: a GROUP BY without a window over the k data. The count of a word is never final,
-- so each new row retracts the previous result (-U) and adds the new one (+U): retract mode.
-- Run: build/wmrun --sql examples/sql/m_sql_retract_count.sql

CREATE TABLE words (word STRING, ts BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'k_sql_tumble_count.csv', 'format' = 'csv');

SELECT word, COUNT(*) AS cnt FROM words GROUP BY word;
