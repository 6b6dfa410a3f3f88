CREATE TABLE c (a INT, t TIMESTAMP(3))
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT a FROM c;