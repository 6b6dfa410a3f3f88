-- Flink nexmark's user function for q14 (com.github.nexmark.flink.udf.CountChar), in Lua, declared
-- in q14.sql with CREATE FUNCTION count_char AS 'nexmark_udfs.count_char' LANGUAGE LUA:
-- count_char(s, c) is the number of bytes of s equal to the first byte of c; 0 when s is NULL.
local M = {}

M.count_char = {args = {"STRING", "STRING"}, returns = "BIGINT", eval = function(s, c)
  if s == nil then return 0 end
  local chr = c:byte(1)
  local n = 0
  for i = 1, #s do
    if s:byte(i) == chr then n = n + 1 end
  end
  return n
end}

return M
