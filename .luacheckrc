-- luacheck configuration: `make lint` checks lua/ spec/ examples/ bench/ with it, and must
-- report 0 warnings. Fix the code, not this file.
std = "lua54"
-- What the code keeps (the SQL code was wrapped to it); longer lines are wrapped.
max_line_length = 120
-- The one convention: an argument or loop variable that is deliberately unused is named with a
-- leading underscore (`_ctx`, `_out`, `_`); every other unused name is a warning.
-- (212: unused argument, 213: unused loop variable.)
ignore = { "212/_.*", "213/_.*" }
files["spec/"] = { std = "+busted" }
