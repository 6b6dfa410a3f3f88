
      SELECT window_start, window_end, COUNT(DISTINCT id) AS ids, SUM(vc)
      FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(rt), INTERVAL '5' SECOND))
      GROUP BY window_start, window_end HAVING SUM(vc) > 7;