
      SET 'pipeline.auto-watermark-interval' = '0';
      CREATE VIEW v (w, n) AS SELECT word, COUNT(*) FROM t GROUP BY word;
      INSERT INTO out SELECT * FROM v;
      RESET 'x';
      SELECT 1 AS one FROM t