std = "lua54"
files["spec/"] = { std = "+busted" }
max_line_length = 120
