CREATE TABLE c (a INT, d DOUBLE, b AS a * 2)
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT b FROM c;