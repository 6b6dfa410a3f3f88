-- A regular join in SQL (docs/sql.md, "Regular joins"): each order with its customer's name,
-- LEFT JOIN, so that an order whose customer is not known yet comes out padded with NULL, and
-- that padded row is retracted (-D) when the customer arrives. One source (the rows below, in
-- this order) split into the two tables, so that the changelog is the same on every run.
--
-- Worked out by hand:
--   order 1 (tea) for customer 7: no customer 7 yet      -> +I[1, tea, <NULL>]
--   customer 7 (ann): order 1's first match              -> -D[1, tea, <NULL>], +I[1, tea, ann]
--   order 2 (cake) for customer 7                        -> +I[2, cake, ann]
--   order 3 (jam) for customer 8: no customer 8          -> +I[3, jam, <NULL>]
--   customer 9 (bob): no order of 9, customers are not padded (LEFT JOIN) -> nothing
local wm = require("wm")

local env = wm.env{}
local rows = env:from_elements(
  {t = "order", id = 1, product = "tea", customer = 7},
  {t = "customer", id = 7, name = "ann"},
  {t = "order", id = 2, product = "cake", customer = 7},
  {t = "order", id = 3, product = "jam", customer = 8},
  {t = "customer", id = 9, name = "bob"})
env:create_temporary_view("orders", rows:filter(function(r) return r.t == "order" end),
  {"id:INT", "product:STRING", "customer:INT"})
env:create_temporary_view("customers", rows:filter(function(r) return r.t == "customer" end),
  {"id:INT", "name:STRING"})

env:execute_sql([[
SELECT o.id, o.product, c.name
FROM orders o LEFT JOIN customers c ON o.customer = c.id;
]])
env:execute()
