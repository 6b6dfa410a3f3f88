
      CREATE VIEW counts AS SELECT id, COUNT(*) AS n FROM s GROUP BY id;
      SELECT n, COUNT(*) AS ids FROM counts GROUP BY n;