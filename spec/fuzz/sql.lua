-- fuzz_sql: the SQL parser and planner (lua/wm/sql) on any text. A script that is not valid
-- must fail with the SQL layer's own error ("f.sql:line:col: ..."), never with a Lua error
-- from inside the library ("attempt to index a nil value" and the like).
local sql = require("wm.sql")
local errors = require("wm.sql.errors")

return function(text)
  local ok, e = pcall(sql.plan, text, {name = "f.sql", dir = "/nonexistent-wmrun-fuzz"})
  if ok then return end
  if errors.is(e) then
    if not tostring(e):match("^f%.sql:%d+:%d+: ") and not tostring(e):match("^f%.sql: ") then
      error("SQL error without a position: " .. tostring(e), 0)
    end
    return
  end
  -- errors raised with a level from the DSL name the script line; anything else is a bug
  error("SQL text failed with an internal error: " .. tostring(e) .. "\n  on: " .. string.format("%q", text), 0)
end
