-- The Lua library (wm, wm.core, wm.sql, wm.testing) as a rock. The version is the one
-- `wmrun --version` prints (LWM_VERSION in bindings/lwm.h); spec/rockspec_spec.lua checks that
-- and that every C and Lua file of the library is listed here.
rockspec_format = "3.0"
package = "wmrun"
version = "0.1.0-1"
source = {
  url = "git+https://example.invalid/wmrun.git",
  tag = "v0.1.0",
}
description = {
  summary = "Event-time stream processing with Apache Flink's rules, in Lua",
  detailed = [[
A C11 core (watermarks, windows, allowed lateness, late-data side outputs, timers) with Lua 5.4
bindings on libuv: the results Flink gives, on one core, without a JVM. This rock installs the
library for lua5.4 (require("wm")); the wmrun command is built by the project's Makefile.]],
  license = "not chosen yet (the repository has no license file)",
  labels = {"streaming", "event-time", "watermarks", "flink"},
}
dependencies = {
  "lua >= 5.4, < 5.5",
  "lpeg",
  "lua-cjson",
}
external_dependencies = {
  LIBUV = {header = "uv.h", library = "uv"},
}
build = {
  type = "builtin",
  modules = {
    ["wm.core"] = {
      sources = {
        "core/base/wm_buf.c",
        "core/base/wm_codec.c",
        "core/base/wm_spsc.c",
        "core/base/wm_value.c",
        "core/exec/wm_exchange.c",
        "core/exec/wm_exec.c",
        "core/exec/wm_metrics_http.c",
        "core/exec/wm_mt.c",
        "core/graph/wm_graph.c",
        "core/io/wm_csv.c",
        "core/io/wm_io.c",
        "core/io/wm_print.c",
        "core/ops/wm_keyedop.c",
        "core/ops/wm_trigger.c",
        "core/ops/wm_tsop.c",
        "core/ops/wm_winop.c",
        "core/time/wm_time.c",
        "core/time/wm_timer.c",
        "core/time/wm_watermark.c",
        "core/time/wm_window.c",
        "core/timeline/wm_timeline.c",
        "bindings/lwm_bridge.c",
        "bindings/lwm_core.c",
        "bindings/lwm_graph.c",
        "bindings/lwm_harness.c",
        "bindings/lwm_io.c",
        "bindings/lwm_metrics.c",
        "bindings/lwm_mt.c",
        "bindings/lwm_ops.c",
        "bindings/lwm_time.c",
        "bindings/lwm_window.c",
      },
      defines = {"_POSIX_C_SOURCE=200809L"},
      incdirs = {"core", "$(LIBUV_INCDIR)"},
      libdirs = {"$(LIBUV_LIBDIR)"},
      libraries = {"uv", "m"},
    },
    ["wm.duration"] = "lua/wm/duration.lua",
    ["wm.evictors"] = "lua/wm/evictors.lua",
    ["wm.format"] = "lua/wm/format.lua",
    ["wm"] = "lua/wm/init.lua",
    ["wm.io"] = "lua/wm/io.lua",
    ["wm.keyed"] = "lua/wm/keyed.lua",
    ["wm.testing"] = "lua/wm/testing.lua",
    ["wm.triggers"] = "lua/wm/triggers.lua",
    ["wm.watermarks"] = "lua/wm/watermarks.lua",
    ["wm.windows"] = "lua/wm/windows.lua",
    ["wm.sql.aggs"] = "lua/wm/sql/aggs.lua",
    ["wm.sql.connectors"] = "lua/wm/sql/connectors.lua",
    ["wm.sql.errors"] = "lua/wm/sql/errors.lua",
    ["wm.sql.expr"] = "lua/wm/sql/expr.lua",
    ["wm.sql"] = "lua/wm/sql/init.lua",
    ["wm.sql.parser"] = "lua/wm/sql/parser.lua",
    ["wm.sql.planner"] = "lua/wm/sql/planner.lua",
    ["wm.sql.tableapi"] = "lua/wm/sql/tableapi.lua",
    ["wm.sql.values"] = "lua/wm/sql/values.lua",
  },
}
