-- The Kafka quick start of docs/connectors.md runs as written: the block after the marker
-- `<!-- quickstart: kafka -->` is one shell script (it starts build/wmrun-kafka-dev, fills a
-- topic with kcat, runs a job, stops the broker), and its standard output is the block after
-- `<!-- quickstart: output -->`. The script runs in a temporary directory that links the
-- repository's build/ and examples/ (so its files stay out of the tree), in a process group
-- of its own that is killed at the end whatever happened (no broker is left running).
local h = require("helper")

local function block_after(text, marker)
  local at = assert(text:find(marker, 1, true), "docs/connectors.md has no " .. marker)
  local body = text:match("\n```[%w]*\n(.-)\n```", at)
  return assert(body, "no fenced block after " .. marker)
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

describe("the Kafka quick start of docs/connectors.md", function()
  it("runs as written and prints the output the doc shows", function()
    local doc = h.read(h.root .. "/docs/connectors.md")
    local script = block_after(doc, "<!-- quickstart: kafka -->")
    local want = block_after(doc, "<!-- quickstart: output -->")
    local dir = h.tmpdir()
    local f = assert(io.open(dir .. "/quickstart.sh", "w"))
    f:write(script, "\n")
    f:close()
    local build = os.getenv("WM_BUILD") or "build"
    local cmd = "cd " .. q(dir) .. " && ln -s " .. q(h.root .. "/" .. build) .. " build && ln -s "
      .. q(h.root .. "/examples") .. " examples && "
      .. "{ setsid sh -c 'exec timeout 120 sh -e quickstart.sh' >out.txt 2>err.txt & p=$!; wait $p; rc=$?; "
      .. "kill -TERM -- -$p 2>/dev/null; exit $rc; }"
    local _, _, code = h.sh("sh -c " .. q(cmd))
    local out, err = h.read(dir .. "/out.txt"), h.read(dir .. "/err.txt")
    h.rmdir(dir)
    assert.are.equal(0, code, err)
    assert.are.equal(want .. "\n", out)
    assert.matches("wmrun%-kafka%-dev: a Kafka%-compatible broker at 127%.0%.0%.1:%d+ for trying things out", err)
  end)

  it("wmrun-kafka-dev stops with a message when it holds more than -m MB", function()
    local dir = h.tmpdir()
    local build = os.getenv("WM_BUILD") or "build"
    -- -m 1: the process itself takes more than 1 MB, so the first check stops it
    local _, err, code = h.sh("cd " .. q(dir) .. " && timeout 60 " .. q(h.root .. "/" .. build .. "/wmrun-kafka-dev")
      .. " -m 1 t:1 >/dev/null")
    h.rmdir(dir)
    assert.are.equal(1, code, err)
    assert.matches("stopping: it holds more than 1 MB of memory %(%-m 1%)", err)
  end)

  it("wmrun-kafka-dev says how to call it", function()
    local build = os.getenv("WM_BUILD") or "build"
    local _, err, code = h.sh(q(h.root .. "/" .. build .. "/wmrun-kafka-dev"))
    assert.are.equal(2, code)
    assert.matches("usage: wmrun%-kafka%-dev %[%-b BROKERS%] %[%-m MB%] %[%-a FILE%] TOPIC:PARTITIONS", err)
  end)
end)
