-- Flink nexmark's user function for q14 (com.github.nexmark.flink.udf.CountChar), in Lua, declared
-- in q14.sql with CREATE FUNCTION count_char AS 'nexmark_udfs.count_char' LANGUAGE LUA:
-- count_char(s, c) is the number of bytes of s equal to the first byte of c; 0 when s is NULL.
local M = {}

-- (string.find with plain = true finds each occurrence in C: one call per occurrence, not one
-- per byte of s)
M.count_char = {args = {"STRING", "STRING"}, returns = "BIGINT", eval = function(s, c)
  if s == nil then return 0 end
  local chr = c:sub(1, 1)
  if chr == "" then return 0 end
  local n, i = 0, 1
  while true do
    local j = s:find(chr, i, true)
    if not j then return n end
    n, i = n + 1, j + 1
  end
end}

return M
