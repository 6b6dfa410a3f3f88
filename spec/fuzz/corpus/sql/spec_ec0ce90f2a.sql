
      SELECT window_end, SUM(vc)
      FROM TABLE(CUMULATE(TABLE s, DESCRIPTOR(rt), INTERVAL '2' SECOND, INTERVAL '6' SECOND))
      GROUP BY window_start, window_end;