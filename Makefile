# wmrun: `make` builds, `make demo` runs a real job, `make test` runs every test.
# On a fresh Debian machine (as root) `make demo` and `make test` install what they need.

PREFIX    ?= /usr/local
DESTDIR   ?=
BUILD     ?= build
CC        ?= cc
PKGS       = lua5.4 libuv
DEBIAN_PKGS = liblua5.4-dev lua5.4 libuv1-dev lua-busted pkg-config gcc make lua-lpeg lua-cjson netcat-openbsd lua-expat \
              clang libclang-rt-14-dev scdoc man-db groff-base luarocks
# for make lint and the API reference (make docs)
DEBIAN_PKGS += lua-check cppcheck lua-ldoc
# the Kafka and NATS connectors (docs/connectors.md), and the server their specs start
DEBIAN_PKGS += librdkafka-dev libnats-dev nats-server
# kcat: the Kafka quick start of docs/connectors.md produces its input with it (and its spec)
DEBIAN_PKGS += kcat
# the Prometheus spec: promtool checks /metrics, a real server scrapes a job (docs/metrics.md)
DEBIAN_PKGS += prometheus
# chromium: spec/ui_spec.lua opens the live view (wmrun --ui) in it, headless
DEBIAN_PKGS += chromium

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# the connectors' client libraries (core/io/wm_*_kafka.c, wm_*_nats.c)
CONN_PKGS  = rdkafka libnats
PKG_CFLAGS += $(shell pkg-config --cflags $(CONN_PKGS) 2>/dev/null)
CONN_LIBS  := $(shell pkg-config --libs $(CONN_PKGS) 2>/dev/null)

WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wcast-align -Wwrite-strings -Wundef -Wformat=2 -Wvla
OPT     ?= -O2 -g
CFLAGS  ?=
CFLAGS  += -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) $(WARN) -fPIC -Icore $(EXTRA_CFLAGS)
LDFLAGS += $(EXTRA_LDFLAGS)

CORE_SRC = $(wildcard core/*/*.c)
BIND_SRC = $(filter-out bindings/wmrun.c,$(wildcard bindings/*.c))
CORE_OBJ = $(CORE_SRC:%.c=$(BUILD)/%.o)
BIND_OBJ = $(BIND_SRC:%.c=$(BUILD)/%.o)
CTEST_SRC = $(wildcard spec/c/test_*.c)

WMRUN   = $(BUILD)/wmrun
MODULE  = $(BUILD)/wm/core.so
CTESTS  = $(BUILD)/test_core
MANPAGE = $(BUILD)/wmrun.1
LUA     = lua5.4

export LUA_PATH  := $(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;$(CURDIR)/spec/?.lua;;
export LUA_CPATH := $(CURDIR)/$(BUILD)/?.so;;
export WMRUN     := $(CURDIR)/$(WMRUN)

.PHONY: all deps build-with-deps demo test test-c test-lua asan tsan valgrind install uninstall clean bench docs \
        fuzz fuzz-build fuzz-bins man
.PHONY: lint ldoc gcstress alloc-sweep

all: $(WMRUN) $(MODULE) $(CTESTS) $(MANPAGE) $(BUILD)/kafka_mock $(BUILD)/wmrun-kafka-dev

# librdkafka's mock cluster on 127.0.0.1, for the Kafka specs (spec/services.lua), and the
# same as a broker to try things with (docs/connectors.md; make install installs it)
$(BUILD)/kafka_mock: tools/kafka_mock.c
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(LDFLAGS) $(CONN_LIBS)

$(BUILD)/wmrun-kafka-dev: tools/kafka_mock.c
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(CFLAGS) $(PKG_CFLAGS) -DWM_KAFKA_DEV -o $@ $< $(LDFLAGS) $(CONN_LIBS)

# Installs the Debian packages that are missing (needs root, or sudo).
deps:
	@./.ci/deps.sh $(DEBIAN_PKGS)

# demo and test install missing packages first, then build in a fresh make (so that the
# pkg-config flags are read after the install).
build-with-deps:
	@./.ci/deps.sh $(DEBIAN_PKGS)
	@$(MAKE) --no-print-directory all

# -MMD -MP: each object's own list of the headers it includes (build/**/*.d), so that a
# changed header rebuilds only what includes it
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CFLAGS) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

-include $(CORE_OBJ:.o=.d) $(BIND_OBJ:.o=.d) $(BUILD)/bindings/wmrun.d

$(WMRUN): $(CORE_OBJ) $(BIND_OBJ) $(BUILD)/bindings/wmrun.o
	@echo "LD $@"
	@$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(PKG_LIBS) $(CONN_LIBS) -lm

$(MODULE): $(CORE_OBJ) $(BIND_OBJ)
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(CFLAGS) -shared -o $@ $^ $(LDFLAGS) $(shell pkg-config --libs libuv 2>/dev/null) $(CONN_LIBS) -lm

$(CTESTS): $(CORE_OBJ) $(CTEST_SRC) $(wildcard spec/c/*.h)
	@echo "LD $@"
	@$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $(CTEST_SRC) $(CORE_OBJ) $(LDFLAGS) $(shell pkg-config --libs libuv 2>/dev/null) $(CONN_LIBS) -lm

demo: build-with-deps
	@echo "== examples/a_tumbling_in_order.lua: 5 s tumbling windows, 2 s bounded out-of-orderness"
	@echo "== input (id,seconds,vc):"; cat examples/data/a_tumbling_in_order.csv
	@echo "== output:"
	$(WMRUN) examples/a_tumbling_in_order.lua

# Every suite, in lanes run beside each other (spec/run_all.sh, docs/testing.md); the last
# line is "N passed, M failed". J=n lanes at a time (default 3 per CPU; J=1: one after the
# other); LANES="name ..." runs only those (spec/run_all.sh --list names them).
J ?=
LANES ?=
test: build-with-deps
	@J=$(J) ./spec/run_all.sh $(BUILD) $(LANES)

ASAN_BUILD = $(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  EXTRA_LDFLAGS="-fsanitize=address,undefined" all
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp \
	  LUA_CPATH="$(CURDIR)/build-asan/?.so;;" WMRUN=$(CURDIR)/build-asan/wmrun \
	  LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)"
asan:
	$(ASAN_BUILD)
	$(ASAN_ENV) J=$(J) ./spec/run_all.sh build-asan $(LANES)

# Every suite under ASan with a full garbage collection after every call into a user
# function (WM_GCSTRESS=1, read by the bridge): a Lua value that C uses without holding a
# reference to it is collected at once, and the use shows as an ASan report or a wrong result.
gcstress:
	$(ASAN_BUILD)
	WM_GCSTRESS=1 $(ASAN_ENV) J=$(J) ./spec/run_all.sh build-asan $(LANES)

# Running out of memory at every allocation of a small job in turn (WM_FAIL_ALLOC=N for every
# N, on the ASan build): each run ends in "not enough memory" or the right output, never a
# crash or a leak (docs/testing.md).
alloc-sweep:
	$(ASAN_BUILD)
	LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp ./spec/alloc_sweep.sh build-asan/wmrun

# ThreadSanitizer over the C tests (the SPSC queue between two threads) and the specs that
# run jobs on several threads (docs/parallelism.md).
# (wm/core.so loaded by lua5.4 stays the normal build: only wmrun starts threads)
tsan: all
	$(MAKE) BUILD=build-tsan OPT="-O1 -g -fno-omit-frame-pointer" \
	  EXTRA_CFLAGS="-fsanitize=thread" EXTRA_LDFLAGS="-fsanitize=thread" all
	./build-tsan/test_core
	TSAN_OPTIONS="halt_on_error=1 exitcode=66" WMRUN=$(CURDIR)/build-tsan/wmrun \
	  lua5.4 /usr/bin/busted -o TAP spec/threads_spec.lua spec/parallel_spec.lua

valgrind: all
	WMRUN_VALGRIND=1 J=$(J) ./spec/run_all.sh $(BUILD) $(LANES)

# The timeline pictures embedded in the docs (docs/img/*.svg), drawn by wmrun --timeline,
# and their screenshots (docs/img/*.png) in headless Chromium when it is installed.
SHOT = chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400
docs: $(WMRUN) ldoc
	@mkdir -p docs/img
	$(WMRUN) --timeline docs/img/timeline_scenario_c.svg examples/c_lateness_side_output.lua >/dev/null
	$(WMRUN) --timeline docs/img/timeline_percentile_vs_bounded.svg \
	  --compare examples/timeline_bounded.lua examples/timeline_percentile.lua >/dev/null
	$(WMRUN) --timeline docs/img/timeline_keys.svg examples/timeline_keys.lua >/dev/null
	@if command -v chromium >/dev/null; then \
	  d=$$(mktemp -d) && \
	  $(WMRUN) --timeline $$d/c.html examples/c_lateness_side_output.lua >/dev/null && \
	  $(WMRUN) --timeline $$d/keys.html examples/timeline_keys.lua >/dev/null && \
	  $(SHOT),640 --screenshot=$(CURDIR)/docs/img/timeline_scenario_c.png file://$$d/c.html 2>/dev/null && \
	  $(SHOT),740 --screenshot=$(CURDIR)/docs/img/timeline_keys.png file://$$d/keys.html 2>/dev/null; \
	  rm -rf $$d; \
	else echo "docs: no chromium: the screenshots (docs/img/*.png) are not redrawn"; fi

# The HTML reference of the job API (config.ld) in $(BUILD)/ldoc: every public function of wm,
# wm.testing and wm.sql from its `---` comment (spec/ldoc_spec.lua checks that none is missing).
ldoc:
	ldoc --fatalwarnings -d $(BUILD)/ldoc .
	@echo "API reference: $(BUILD)/ldoc/index.html"

# Static checks (.ci/run): luacheck over the Lua with .luacheckrc (0 warnings: fix the code, not
# the configuration) and cppcheck over the C. cppcheck needs no suppression today; one that
# becomes necessary goes inline (`// cppcheck-suppress id` above the line) with the reason.
LINT_LUA = lua spec examples bench
lint:
	luacheck -q --no-color $(LINT_LUA)
	cppcheck -q --std=c11 --enable=warning,performance,portability --error-exitcode=1 --inline-suppr \
	  -Icore -Ibindings core bindings

bench: all
	@./bench/run.sh

# libFuzzer targets (docs/fuzzing.md): spec/fuzz/fuzz_*.c in C, and the Lua-state targets
# (spec/fuzz/fuzz_lua.c running spec/fuzz/<name>.lua). `make fuzz` runs each for
# FUZZ_SECONDS from its seed corpus (spec/fuzz/corpus/<name>); finds go to build-fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_BUILD   ?= build-fuzz
FUZZ_C        = csv duration codec window ckpt rexpr
FUZZ_LUA      = sql json
FUZZ_TARGETS ?= $(FUZZ_C) $(FUZZ_LUA)
FUZZ_SAN      = -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
                -Wno-format-nonliteral

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do ./spec/fuzz/run.sh $(FUZZ_BUILD) $$t $(FUZZ_SECONDS) || exit 1; done

fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
	  EXTRA_CFLAGS="$(FUZZ_SAN)" fuzz-bins

fuzz-bins: $(FUZZ_C:%=$(BUILD)/fuzz_%) $(FUZZ_LUA:%=$(BUILD)/fuzz_%)

$(FUZZ_LUA:%=$(BUILD)/fuzz_%): $(BUILD)/fuzz_%: spec/fuzz/fuzz_lua.c spec/fuzz/%.lua $(CORE_OBJ) $(BIND_OBJ)
	@echo "LD $@"
	@$(CC) $(CFLAGS) $(PKG_CFLAGS) -fsanitize=fuzzer -DWM_ROOT='"$(CURDIR)"' \
	  -DFUZZ_SCRIPT='"$(CURDIR)/spec/fuzz/$*.lua"' -o $@ spec/fuzz/fuzz_lua.c $(CORE_OBJ) $(BIND_OBJ) \
	  $(LDFLAGS) $(PKG_LIBS) $(CONN_LIBS) -lm

$(BUILD)/fuzz_%: spec/fuzz/fuzz_%.c spec/fuzz/fuzz.h $(CORE_OBJ)
	@echo "LD $@"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(CORE_OBJ) $(LDFLAGS) $(shell pkg-config --libs libuv 2>/dev/null) $(CONN_LIBS) -lm

# Each thing once (docs/install.md): the binary; the Lua part where both wmrun and lua5.4
# find it (share/lua/5.4/wm, with the timeline page's script wm/timeline/page.js); the C module for lua5.4 (lib/lua/5.4/wm/core.so); the man
# page; the docs and examples (share/doc/wmrun).
LUADIR_I = $(DESTDIR)$(PREFIX)/share/lua/5.4
CMODDIR_I = $(DESTDIR)$(PREFIX)/lib/lua/5.4
DOCDIR_I = $(DESTDIR)$(PREFIX)/share/doc/wmrun
MANDIR_I = $(DESTDIR)$(PREFIX)/share/man/man1

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(LUADIR_I)/wm $(CMODDIR_I)/wm $(MANDIR_I) $(DOCDIR_I)/docs/img
	install -m 755 $(WMRUN) $(DESTDIR)$(PREFIX)/bin/wmrun
	install -m 755 $(BUILD)/wmrun-kafka-dev $(DESTDIR)$(PREFIX)/bin/wmrun-kafka-dev
	@cd lua && find wm -name '*.lua' -o -name '*.js' | sort | while read -r f; do \
	  install -D -m 644 "$$f" "$(LUADIR_I)/$$f" || exit 1; done
	install -m 755 $(MODULE) $(CMODDIR_I)/wm/core.so
	install -m 644 $(MANPAGE) $(MANDIR_I)/wmrun.1
	install -m 644 README.md $(DOCDIR_I)/
	install -m 644 docs/*.md $(DOCDIR_I)/docs/
	install -m 644 docs/img/* $(DOCDIR_I)/docs/img/
	@cd examples && find . -type f | sort | while read -r f; do \
	  install -D -m 644 "$$f" "$(DOCDIR_I)/examples/$$f" || exit 1; done

# (share/wmrun: where earlier versions put a second copy of the Lua files)
uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/bin/wmrun $(DESTDIR)$(PREFIX)/bin/wmrun-kafka-dev $(LUADIR_I)/wm $(CMODDIR_I)/wm $(MANDIR_I)/wmrun.1 \
	  $(DOCDIR_I) $(DESTDIR)$(PREFIX)/share/wmrun

# The man page, from docs/wmrun.1.scd (scdoc).
man: $(MANPAGE)

$(MANPAGE): docs/wmrun.1.scd
	@mkdir -p $(dir $@)
	@command -v scdoc >/dev/null || { echo "scdoc is missing (make deps installs it)" >&2; exit 1; }
	@echo "SCDOC $@"
	@scdoc < $< > $@

clean:
	rm -rf build build-asan build-tsan build-fuzz
