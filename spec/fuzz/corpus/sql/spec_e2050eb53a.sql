
      SELECT id, window_start, window_end FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(rt), INTERVAL '5' SECOND))
      WHERE vc > 4;