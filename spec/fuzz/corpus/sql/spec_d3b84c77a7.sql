
      SELECT id, vc * 2 + 1 AS v, CASE WHEN vc > 3 THEN 'big' ELSE 'small' END AS size,
             CAST(vc AS DOUBLE) / 2 AS half, UPPER(id) || '!' AS u, vc / 2 AS q, rt
      FROM s WHERE vc <> 2 AND NOT (id = 'b' AND vc < 2);