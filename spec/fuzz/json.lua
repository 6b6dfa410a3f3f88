-- fuzz_json: JSON lines through parse_json (lua-cjson and the integer conversion of
-- bindings/lwm_io.c) in a real job. Every line is a record or a parse error (side output);
-- a decoded record is never nil, and integral numbers within 2^53 are integers.
local wm = require("wm")

local function check_numbers(v, depth)
  if type(v) == "number" then
    if math.type(v) == "float" and v == math.floor(v) and math.abs(v) <= 2^53 then
      error("integral JSON number stayed a float: " .. tostring(v), 0)
    end
  elseif type(v) == "table" and depth < 64 then
    for _, x in pairs(v) do check_numbers(x, depth + 1) end
  end
end

return function(text)
  local lines = {}
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  local env = wm.env{watermark_interval = 0}
  local parsed = env:from_elements(table.unpack(lines)):parse_json{on_error = "side_output"}
  local out = parsed:collect()
  local errs = parsed:get_side_output("parse_errors"):collect()
  env:execute()
  if #out + #errs ~= #lines then
    error(string.format("%d lines, %d records, %d errors", #lines, #out, #errs), 0)
  end
  for _, r in ipairs(out) do check_numbers(r, 0) end
  for _, e in ipairs(errs) do
    if type(e.error) ~= "string" or math.type(e.line) ~= "integer" or type(e.text) ~= "string" then
      error("a parse error record without error, line and text", 0)
    end
  end
end
