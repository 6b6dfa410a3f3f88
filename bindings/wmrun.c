#define _XOPEN_SOURCE 700
/* wmrun: runs a job script. Modelled on lua.c: everything runs inside a protected call,
 * a message handler turns any error into text with a traceback, and errors print as
 * "wmrun: job.lua:12: message". */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "time/wm_time.h"
#include "exec/wm_savepoint.h"
#include "lwm.h"
#include "lwm_mt.h"
#include "lwm_alloc.h"
#include "lwm_report.h"
#include "lwm_timeline.h"

#include <lualib.h>

int luaopen_wm_core(lua_State *L);

static const char *progname = "wmrun";

/* The whole usage on stdout (--help); on stderr, after the one line that says what was
 * wrong, only a hint to --help, as GNU tools do. */
static void usage(FILE *f) {
  if (f == stderr) {
    fprintf(f, "Try '%s --help' for more information.\n", progname);
    return;
  }
  fprintf(f,
          "usage: %s [options] job.lua [args...]\n"
          "       %s [options] --sql job.sql\n"
          "       %s lab LAB.lua [--json] [--plot out.html]   (docs/lab.md)\n"
          "       %s savepoint CHECKPOINT_DIR TARGET [--timeout D]   (docs/checkpoints.md)\n"
          "Runs an event-time stream-processing job written in Lua (job.lua '-': read the\n"
          "job from standard input).\n\n"
          "options:\n"
          "  -h, --help                  show this help and exit\n"
          "  -v, --version               show the versions of wmrun, Lua and libuv and exit\n"
          "  -p, --parallelism N         run N instances of each operator\n"
          "  --max-parallelism N         the job's number of key groups (default 128): the\n"
          "                              largest parallelism its checkpoints restore at\n"
          "  -t, --threads N             run the instances on N threads (0 = one per core;\n"
          "                              default 1: one thread, a deterministic schedule)\n"
          "  --watermark-interval D      periodic watermark interval (e.g. 200ms, 0 = every record)\n"
          "  --trace-watermarks          print every watermark advance on stderr\n"
          "  --trace-watermarks=json     the same, one JSON object a line\n"
          "  --trace-watermarks=json,records\n"
          "                              also a line per record at a keyed operator, late\n"
          "                              record, window firing and timer (with its key)\n"
          "  --metrics                   print per-operator counts on stderr at the end\n"
          "  --metrics-port PORT         serve Prometheus metrics at http://127.0.0.1:PORT/metrics\n"
          "                              while the job runs (0 = any free port, printed on stderr)\n"
          "  --ui PORT                   serve a live view of the job at http://127.0.0.1:PORT/\n"
          "                              (its JSON at /api/job; 0 = any free port, printed)\n"
          "  --progress, --no-progress   show (or never show) a progress line on stderr (default:\n"
          "                              when stderr is a terminal and the job runs over 1 s)\n"
          "  --sql                       run a SQL script (docs/sql.md) instead of a Lua job\n"
          "  --no-drain                  on SIGINT/SIGTERM/SIGHUP stop at once (exit 130)\n"
          "                              instead of draining (ending the input, firing windows)\n"
          "  --checkpoint-dir DIR        checkpoint the job into DIR and resume from its newest\n"
          "                              checkpoint at the next start (docs/checkpoints.md);\n"
          "                              SIGTERM then stops with a checkpoint, without draining;\n"
          "                              DIR may be nats://HOST:PORT/BUCKET (NATS JetStream)\n"
          "  --checkpoint-interval D     time between checkpoints (default 10s)\n"
          "  --stall-timeout D           fail a job whose sources stay paused by backpressure\n"
          "                              with nothing being written for D (default 60s; 0 = never)\n"
          "  --fresh                     with --checkpoint-dir: remove its checkpoints, start over\n"
          "  --allow-state-change        with --checkpoint-dir: resume even when a window's function\n"
          "                              changed since the checkpoint (its open windows go on from\n"
          "                              the state the old function made)\n"
          "  --from-savepoint PATH       with --checkpoint-dir: start from the savepoint PATH (a\n"
          "                              folder or nats:// URL; operators matched by uid)\n"
          "  --allow-non-restored-state  with --from-savepoint: drop the savepoint's state of\n"
          "                              operators this job no longer has\n"
          "  --stop-with-savepoint TARGET  with --checkpoint-dir: SIGTERM also writes a savepoint\n"
          "                              into TARGET (a new folder, or a nats:// URL)\n"
          "  --restart-backoff D         scale_out: wait D before starting a failed task again,\n"
          "                              doubling each time (default 200ms; docs/scaleout.md)\n"
          "  --timeline FILE             draw the run (records, watermarks, windows, late data)\n"
          "                              into FILE: .html (a page) or .svg\n"
          "  --timeline-x order|time     x axis of the timeline: arrival order (default) or\n"
          "                              processing time\n"
          "  --from-trace TRACE.jsonl    with --timeline OUT.html: draw a --trace-watermarks=json\n"
          "                              trace (filter by operator and key on the page);\n"
          "                              runs no job\n"
          "  --compare OTHER.lua         with --timeline: also run OTHER.lua (same arguments)\n"
          "                              and draw both runs one above the other\n"
          "  --lua-path                  print shell exports that let lua5.4 require(\"wm\")\n\n"
          "Exit status: 0 success, 1 the job failed, 2 bad usage.\n",
          progname, progname, progname, progname);
}

typedef struct options {
  const char *script;
  int script_index;
  int argc;
  char **argv;
  int64_t wm_interval; /* -1 = not given */
  lua_Integer parallelism;
  lua_Integer threads; /* -1 = not given */
  lua_Integer max_parallelism; /* 0 = not given */
  int trace, metrics, no_drain;
  int metrics_port; /* --metrics-port; -1 = not given */
  int ui_port;      /* --ui; -1 = not given */
  int progress;     /* --progress 1, --no-progress 0, -1 = not given */
  const char *ck_dir;  /* --checkpoint-dir */
  int64_t ck_interval; /* --checkpoint-interval; -1 = not given */
  int64_t stall;       /* --stall-timeout; -1 = not given */
  int64_t backoff;     /* --restart-backoff; -1 = not given */
  int fresh;
  int allow_state_change; /* --allow-state-change */
  const char *from_sp, *stop_sp; /* --from-savepoint, --stop-with-savepoint */
  int allow_non_restored;        /* --allow-non-restored-state */
  int sql; /* --sql: the script is SQL, run by wm.sql */
  int lab; /* wmrun lab LAB.lua: the script returns a wm.lab, run by wm.lab.main */
  const char *timeline, *compare; /* --timeline FILE, --compare OTHER.lua */
  const char *from_trace;         /* --from-trace TRACE.jsonl: draw it, run no job */
  int timeline_x;                 /* 1: --timeline-x time */
  wm_timeline *tl;                /* the recorder of the run in progress */
  int load_error;
  char *stdin_src; /* wmrun -: the job read from standard input (each thread loads it) */
  size_t stdin_len;
  char luadir[4096];
  char cdir[4096];
} options;

static int run_job(options *po, const char *script);

static int file_exists(const char *p) {
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  fclose(f);
  return 1;
}

/* The first of dir + cands[i] + file that exists, made absolute into out; -1 if none. */
static int find_near(const char *dir, const char *const *cands, size_t n, const char *file,
                     char *out, size_t outlen) {
  char probe[8400];
  for (size_t i = 0; i < n; i++) {
    snprintf(out, outlen, "%s%s", dir, cands[i]);
    snprintf(probe, sizeof probe, "%s/%s", out, file);
    if (file_exists(probe)) {
      char real[PATH_MAX];
      if (realpath(out, real)) snprintf(out, outlen, "%s", real);
      return 0;
    }
  }
  return -1;
}

/* Finds lua/wm/init.lua and wm/core.so next to the binary: the build tree (build/wmrun ->
 * ../lua and build/wm/core.so) or an installed prefix (bin/wmrun -> ../share/lua/5.4 and
 * ../lib/lua/5.4/wm/core.so, where lua5.4 looks too). WMRUN_LUA_DIR overrides the Lua
 * folder. The C module is only needed for --lua-path (wmrun links wm.core in): cdir stays
 * empty when there is none. */
static int find_lua_dir(options *o) {
  static const char *const lua_cands[] = {"/../lua", "/../share/lua/5.4", "/../share/wmrun/lua",
                                          "/lua"};
  static const char *const c_cands[] = {"", "/../lib/lua/5.4"};
  char exe[4096];
  size_t n = sizeof exe;
  o->cdir[0] = '\0';
  if (uv_exepath(exe, &n) != 0) return -1;
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = '\0';
  if (find_near(exe, c_cands, sizeof c_cands / sizeof c_cands[0], "wm/core.so", o->cdir,
                sizeof o->cdir) != 0)
    o->cdir[0] = '\0';
  const char *env = getenv("WMRUN_LUA_DIR");
  if (env && *env) {
    snprintf(o->luadir, sizeof o->luadir, "%s", env);
    return 0;
  }
  return find_near(exe, lua_cands, sizeof lua_cands / sizeof lua_cands[0], "wm/init.lua",
                   o->luadir, sizeof o->luadir);
}

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  /* errors raised by execute already carry the user function's traceback */
  if (strstr(msg, "\nstack traceback:")) return 1;
  /* a data error from execute names where it happened; the execute call's traceback would
   * add nothing (core.execute keeps its last such message in the registry) */
  lua_getfield(L, LUA_REGISTRYINDEX, "wm.core.data_error");
  int data_error = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), msg) == 0;
  lua_pop(L, 1);
  if (data_error) return 1;
  lua_getfield(L, LUA_REGISTRYINDEX, "wmrun.options");
  const options *o = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (o && o->load_error) return 1;
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static const char strict_lua[] =
    "local mt = getmetatable(_G) or {}\n"
    "mt.__index = function(_, k)\n"
    "  error(\"undefined global '\" .. tostring(k) .. \"'\", 2)\n"
    "end\n"
    "setmetatable(_G, mt)\n";

/* wmrun -: the job read once from standard input, loaded as lua - does ("stdin:3:
 * message"), a first line starting with # skipped as luaL_loadfile skips it. */
static int load_stdin_script(lua_State *L, const options *o) {
  const char *s = o->stdin_src;
  size_t n = o->stdin_len;
  if (n > 0 && s[0] == '#') {
    while (n > 0 && *s != '\n') {
      s++;
      n--;
    }
  }
  return luaL_loadbuffer(L, s, n, "=stdin");
}

static int read_stdin_script(options *o) {
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fprintf(stderr, "%s: out of memory reading the job from standard input\n", progname);
      return -1;
    }
    len += fread(buf + len, 1, cap - len, stdin);
    if (len < cap) break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) free(buf);
    buf = nb;
    cap *= 2;
  }
  if (ferror(stdin)) {
    fprintf(stderr, "%s: cannot read the job from standard input: %s\n", progname,
            strerror(errno));
    free(buf);
    return -1;
  }
  o->stdin_src = buf;
  o->stdin_len = len;
  return 0;
}

static int pmain(lua_State *L) {
  options *o = lua_touserdata(L, 1);
  lua_pushlightuserdata(L, o);
  lua_setfield(L, LUA_REGISTRYINDEX, "wmrun.options");
  luaL_openlibs(L);
  /* wm.core is linked in; the Lua part is found on package.path */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_wm_core);
  lua_setfield(L, -2, "wm.core");
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", o->luadir, o->luadir);
  lua_getfield(L, -2, "path");
  lua_concat(L, 2);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  /* arg, as lua.c makes it */
  lua_createtable(L, o->argc - o->script_index, o->script_index + 1);
  for (int i = 0; i < o->argc; i++) {
    lua_pushstring(L, o->argv[i]);
    lua_rawseti(L, -2, i - o->script_index);
  }
  lua_pushstring(L, o->script); /* --compare runs another script with the same arguments */
  lua_rawseti(L, -2, 0);
  lua_setglobal(L, "arg");
  lua_pushstring(L, o->script); /* the job's name in its checkpoints */
  lua_setfield(L, LUA_REGISTRYINDEX, "wm.core.job");
  /* the library, with the command line's overrides */
  lua_getglobal(L, "require");
  lua_pushliteral(L, "wm");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "_overrides");
  if (o->wm_interval >= 0) {
    lua_pushinteger(L, (lua_Integer)o->wm_interval);
    lua_setfield(L, -2, "watermark_interval");
  }
  if (o->parallelism > 0) {
    lua_pushinteger(L, o->parallelism);
    lua_setfield(L, -2, "parallelism");
  }
  if (o->threads >= 0) {
    lua_pushinteger(L, o->threads);
    lua_setfield(L, -2, "threads");
  }
  if (o->max_parallelism > 0) {
    lua_pushinteger(L, o->max_parallelism);
    lua_setfield(L, -2, "max_parallelism");
  }
  if (o->trace >= 2) lua_pushstring(L, o->trace == 3 ? "json,records" : "json");
  else lua_pushboolean(L, o->trace);
  lua_setfield(L, -2, "trace_watermarks");
  lua_pushboolean(L, o->metrics);
  lua_setfield(L, -2, "metrics");
  lua_pushboolean(L, o->no_drain);
  lua_setfield(L, -2, "no_drain");
  if (o->metrics_port >= 0) {
    lua_pushinteger(L, o->metrics_port);
    lua_setfield(L, -2, "metrics_port");
  }
  if (o->ui_port >= 0) {
    lua_pushinteger(L, o->ui_port);
    lua_setfield(L, -2, "ui_port");
  }
  if (o->progress >= 0) {
    lua_pushboolean(L, o->progress);
    lua_setfield(L, -2, "progress");
  }
  if (o->backoff >= 0) {
    lua_pushinteger(L, (lua_Integer)o->backoff);
    lua_setfield(L, -2, "restart_backoff");
  }
  if (o->ck_dir) {
    lua_pushstring(L, o->ck_dir);
    lua_setfield(L, -2, "checkpoint_dir");
  }
  if (o->ck_interval >= 0) {
    lua_pushinteger(L, (lua_Integer)o->ck_interval);
    lua_setfield(L, -2, "checkpoint_interval");
  }
  if (o->stall >= 0) {
    lua_pushinteger(L, (lua_Integer)o->stall);
    lua_setfield(L, -2, "stall_timeout");
  }
  lua_pushboolean(L, o->fresh);
  lua_setfield(L, -2, "fresh");
  lua_pushboolean(L, o->allow_state_change);
  lua_setfield(L, -2, "allow_state_change");
  if (o->from_sp) {
    lua_pushstring(L, o->from_sp);
    lua_setfield(L, -2, "from_savepoint");
  }
  if (o->stop_sp) {
    lua_pushstring(L, o->stop_sp);
    lua_setfield(L, -2, "stop_with_savepoint");
  }
  lua_pushboolean(L, o->allow_non_restored);
  lua_setfield(L, -2, "allow_non_restored_state");
  if (o->tl) {
    lua_pushlightuserdata(L, o->tl);
    lua_setfield(L, -2, "timeline");
  }
  lua_pop(L, 2);
  /* the job */
  if (o->sql) { /* a SQL script: wm.sql parses, plans and runs it */
    lua_getglobal(L, "require");
    lua_pushliteral(L, "wm.sql");
    lua_call(L, 1, 1);
    if (o->stdin_src && strcmp(o->script, "-") == 0) { /* wmrun --sql -: standard input */
      lua_getfield(L, -1, "run");
      lua_pushlstring(L, o->stdin_src, o->stdin_len);
      lua_createtable(L, 0, 2);
      lua_pushliteral(L, "stdin");
      lua_setfield(L, -2, "name");
      lua_pushliteral(L, ".");
      lua_setfield(L, -2, "dir");
      lua_call(L, 2, 0);
      return 0;
    }
    lua_getfield(L, -1, "run_file");
    lua_pushstring(L, o->script);
    lua_call(L, 1, 0);
    return 0;
  }
  int st = o->stdin_src && strcmp(o->script, "-") == 0 ? load_stdin_script(L, o)
                                                       : luaL_loadfile(L, o->script);
  if (st != LUA_OK) { /* a syntax error: no traceback, as lua.c */
    o->load_error = 1;
    return lua_error(L);
  }
  if (luaL_dostring(L, strict_lua) != LUA_OK) return lua_error(L);
  int nargs = o->argc - o->script_index - 1;
  luaL_checkstack(L, nargs + 4, "too many arguments to script");
  if (o->lab) { /* the lab file returns the lab; wm.lab.main(lab, script, options...) runs it */
    lua_call(L, 0, 1);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "wm.lab");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "main"); /* lab, module, main */
    lua_remove(L, -2);
    lua_insert(L, -2); /* main, lab */
    lua_pushstring(L, o->script);
    for (int i = o->script_index + 1; i < o->argc; i++) lua_pushstring(L, o->argv[i]);
    lua_call(L, nargs + 2, 0);
    return 0;
  }
  for (int i = o->script_index + 1; i < o->argc; i++) lua_pushstring(L, o->argv[i]);
  lua_call(L, nargs, 0);
  return 0;
}

/* The multi-core executor's spawn hook: runs the job script in a worker thread's fresh
 * Lua state exactly as pmain ran it in the first one. */
static int run_worker(lua_State *L, void *ud) {
  options *o = malloc(sizeof *o);
  if (!o) {
    lua_pushliteral(L, "not enough memory");
    return LUA_ERRMEM;
  }
  *o = *(const options *)ud; /* a copy: pmain writes load_error */
  lua_pushcfunction(L, msghandler);
  lua_pushcfunction(L, pmain);
  lua_pushlightuserdata(L, o);
  int st = lua_pcall(L, 1, 0, -3);
  if (st != LUA_OK && !lua_isstring(L, -1)) {
    lua_pop(L, 1);
    lua_pushliteral(L, "(error object is not a string)");
  }
  free(o); /* the registry's "wmrun.options" is no longer read: the script has ended */
  return st;
}

/* A duration option (--name D or --name=D) into *out; 0, or -1 after saying what is wrong. */
static int duration_opt(const char *name, const char *a, char **argv, int *i, int64_t *out) {
  const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : argv[++*i];
  wm_error err;
  if (!v) {
    fprintf(stderr, "%s: %s needs a duration\n", progname, name);
    usage(stderr);
    return -1;
  }
  if (wm_duration_parse(v, out, &err) != 0) {
    fprintf(stderr, "%s: %s: %s\n", progname, name, err.msg);
    return -1;
  }
  return 0;
}

/* wmrun savepoint CHECKPOINT_DIR TARGET [--timeout D]: asks the job running on that
 * checkpoint directory for a savepoint into TARGET and waits for it (exec/wm_savepoint.h). */
static int savepoint_main(int argc, char **argv) {
  const char *pos[2] = {NULL, NULL};
  int npos = 0;
  int64_t timeout = 60000;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--timeout") == 0 || strncmp(argv[i], "--timeout=", 10) == 0) {
      if (duration_opt("--timeout", argv[i], argv, &i, &timeout) != 0) return 2;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "%s: savepoint: unknown option '%s'\n", progname, argv[i]);
      return 2;
    } else if (npos < 2) {
      pos[npos++] = argv[i];
    } else {
      fprintf(stderr, "%s: savepoint: one checkpoint directory and one target, got '%s' too\n",
              progname, argv[i]);
      return 2;
    }
  }
  if (npos != 2) {
    fprintf(stderr, "%s: savepoint: usage: %s savepoint CHECKPOINT_DIR TARGET [--timeout D] (the "
                    "running job's --checkpoint-dir, and a new folder or nats:// URL)\n",
            progname, progname);
    return 2;
  }
  char msg[1200];
  if (wm_savepoint_request(pos[0], pos[1], timeout, msg, sizeof msg) != 0) {
    fprintf(stderr, "%s: savepoint: %s\n", progname, msg);
    return 1;
  }
  printf("%s\n", msg);
  return 0;
}

int main(int argc, char **argv) {
  /* SIGUSR1 asks for the metrics; until the job's loop handles it (uv_signal_start), its
   * default action would end the process: one sent while the job starts is ignored */
  struct sigaction ign;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  if (sigaction(SIGUSR1, &ign, NULL) != 0) perror("wmrun: sigaction(SIGUSR1)");
  /* SIGUSR2: wmrun savepoint's request, handled once checkpoints run (exec/wm_savepoint.h) */
  if (sigaction(SIGUSR2, &ign, NULL) != 0) perror("wmrun: sigaction(SIGUSR2)");
  if (argc > 1 && strcmp(argv[1], "savepoint") == 0) return savepoint_main(argc, argv);
  options o;
  memset(&o, 0, sizeof o);
  o.wm_interval = -1;
  o.ck_interval = -1;
  o.stall = -1;
  o.backoff = -1;
  o.threads = -1;
  o.metrics_port = -1;
  o.ui_port = -1;
  o.progress = -1;
  o.argc = argc;
  o.argv = argv;
  int print_path = 0;
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) break;
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) {
      printf("wmrun %s (%s, libuv %s)\n", LWM_VERSION, LUA_RELEASE, uv_version_string());
      return 0;
    } else if (strcmp(a, "--lua-path") == 0) {
      print_path = 1;
    } else if (strcmp(a, "--trace-watermarks") == 0) {
      o.trace = 1;
    } else if (strncmp(a, "--trace-watermarks=", 19) == 0) {
      if ((o.trace = lwm_trace_mode(a + 19, 1)) < 0) {
        fprintf(stderr, "%s: --trace-watermarks: expected 'text', 'json' or 'json,records', "
                "got '%s'\n", progname, a + 19);
        return 2;
      }
    } else if (strcmp(a, "--metrics") == 0) {
      o.metrics = 1;
    } else if (strcmp(a, "--progress") == 0 || strcmp(a, "--no-progress") == 0) {
      o.progress = a[2] == 'p';
    } else if (strcmp(a, "--metrics-port") == 0 || strcmp(a, "--ui") == 0) {
      const char *v = argv[++i];
      char *end;
      long p = v ? strtol(v, &end, 10) : -1;
      int ui = a[2] == 'u';
      if (!v || !*v || *end || p < 0 || p > 65535) {
        fprintf(stderr, "%s: bad %s port '%s' (expected 0 to 65535)\n", progname,
                ui ? "--ui" : "metrics", v ? v : "");
        return 2;
      }
      if (ui) o.ui_port = (int)p;
      else o.metrics_port = (int)p;
    } else if (strcmp(a, "--sql") == 0) {
      o.sql = 1;
    } else if (strcmp(a, "--no-drain") == 0) {
      o.no_drain = 1;
    } else if (strcmp(a, "--fresh") == 0) {
      o.fresh = 1;
    } else if (strcmp(a, "--allow-state-change") == 0) {
      o.allow_state_change = 1;
    } else if (strcmp(a, "--allow-non-restored-state") == 0) {
      o.allow_non_restored = 1;
    } else if (strcmp(a, "--from-savepoint") == 0 || strcmp(a, "--stop-with-savepoint") == 0) {
      const char *v = argv[++i];
      if (!v || !*v) {
        fprintf(stderr, "%s: %s needs a savepoint's folder or URL\n", progname, a);
        usage(stderr);
        return 2;
      }
      if (a[2] == 'f') o.from_sp = v;
      else o.stop_sp = v;
    } else if (strcmp(a, "--checkpoint-dir") == 0 || strncmp(a, "--checkpoint-dir=", 17) == 0) {
      const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : argv[++i];
      if (!v || !*v) {
        fprintf(stderr, "%s: --checkpoint-dir needs a folder\n", progname);
        usage(stderr);
        return 2;
      }
      o.ck_dir = v;
    } else if (strcmp(a, "--checkpoint-interval") == 0 ||
               strncmp(a, "--checkpoint-interval=", 22) == 0) {
      if (duration_opt("--checkpoint-interval", a, argv, &i, &o.ck_interval) != 0) return 2;
    } else if (strcmp(a, "--stall-timeout") == 0 || strncmp(a, "--stall-timeout=", 16) == 0) {
      if (duration_opt("--stall-timeout", a, argv, &i, &o.stall) != 0) return 2;
    } else if (strcmp(a, "--restart-backoff") == 0 || strncmp(a, "--restart-backoff=", 18) == 0) {
      if (duration_opt("--restart-backoff", a, argv, &i, &o.backoff) != 0) return 2;
      if (o.backoff < 1) {
        fprintf(stderr, "%s: --restart-backoff must be at least 1ms\n", progname);
        return 2;
      }
    } else if (strcmp(a, "--from-trace") == 0) {
      if (!(o.from_trace = argv[++i])) {
        fprintf(stderr, "%s: --from-trace needs a file (the JSON lines of --trace-watermarks=json)\n",
                progname);
        return 2;
      }
    } else if (strcmp(a, "--timeline") == 0 || strcmp(a, "--compare") == 0 ||
               strcmp(a, "--timeline-x") == 0) {
      const char *v = argv[++i];
      if (!v) {
        fprintf(stderr, "%s: %s needs an argument\n", progname, a);
        usage(stderr);
        return 2;
      }
      if (a[2] == 'c') o.compare = v;
      else if (a[10] == '\0') o.timeline = v;
      else if (strcmp(v, "order") == 0 || strcmp(v, "time") == 0)
        o.timeline_x = v[0] == 't';
      else {
        fprintf(stderr, "%s: --timeline-x: expected 'order' or 'time', got '%s'\n", progname, v);
        return 2;
      }
    } else if (strcmp(a, "-p") == 0 || strcmp(a, "--parallelism") == 0 ||
               strncmp(a, "--parallelism=", 14) == 0) {
      const char *v = a[1] == 'p' ? argv[++i] : strchr(a, '=') ? strchr(a, '=') + 1 : argv[++i];
      char *end;
      long p = v ? strtol(v, &end, 10) : 0;
      if (!v || *end || p < 1 || p > 1024) {
        fprintf(stderr, "%s: bad parallelism '%s' (expected 1 to 1024)\n", progname, v ? v : "");
        usage(stderr);
        return 2;
      }
      o.parallelism = p;
    } else if (strcmp(a, "--max-parallelism") == 0 || strncmp(a, "--max-parallelism=", 18) == 0) {
      const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : argv[++i];
      char *end;
      long m = v ? strtol(v, &end, 10) : 0;
      if (!v || *end || m < 1 || m > 32768) {
        fprintf(stderr, "%s: bad max parallelism '%s' (expected 1 to 32768: the number of key "
                        "groups)\n", progname, v ? v : "");
        usage(stderr);
        return 2;
      }
      o.max_parallelism = m;
    } else if (strcmp(a, "-t") == 0 || strcmp(a, "--threads") == 0 ||
               strncmp(a, "--threads=", 10) == 0) {
      const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : argv[++i];
      char *end;
      long t = v ? strtol(v, &end, 10) : -1;
      if (!v || *end || t < 0 || t > 256) {
        fprintf(stderr, "%s: bad thread count '%s' (expected 0 to 256; 0 = one per core)\n",
                progname, v ? v : "");
        usage(stderr);
        return 2;
      }
      o.threads = t;
    } else if (strcmp(a, "--watermark-interval") == 0 ||
               strncmp(a, "--watermark-interval=", 21) == 0) {
      if (duration_opt("--watermark-interval", a, argv, &i, &o.wm_interval) != 0) return 2;
    } else {
      fprintf(stderr, "%s: unknown option '%s'\n", progname, a);
      usage(stderr);
      return 2;
    }
  }
  if (find_lua_dir(&o) != 0) {
    fprintf(stderr, "%s: cannot find the wm Lua library (set WMRUN_LUA_DIR)\n", progname);
    return 1;
  }
  if (print_path) {
    printf("export LUA_PATH='%s/?.lua;%s/?/init.lua;;'\n", o.luadir, o.luadir);
    if (!o.cdir[0]) {
      fprintf(stderr, "%s: cannot find wm/core.so (the Lua module) next to %s\n", progname,
              argv[0]);
      return 1;
    }
    printf("export LUA_CPATH='%s/?.so;;'\n", o.cdir);
    return 0;
  }
  if (i < argc && strcmp(argv[i], "lab") == 0) { /* wmrun lab LAB.lua [lab options] */
    o.lab = 1;
    if (++i >= argc) {
      fprintf(stderr, "%s: lab: no lab file given\n", progname);
      usage(stderr);
      return 2;
    }
  }
  if (o.from_trace) { /* wmrun --timeline OUT.html --from-trace TRACE.jsonl: no job */
    char err[600];
    if (!o.timeline) {
      fprintf(stderr, "%s: --from-trace needs --timeline OUT.html\n", progname);
      return 2;
    }
    if (lwm_timeline_from_trace(o.luadir, o.from_trace, o.timeline, err, sizeof err) != 0) {
      fprintf(stderr, "%s: --from-trace %s: %s\n", progname, o.from_trace, err);
      return 1;
    }
    return 0;
  }
  if (i >= argc) {
    fprintf(stderr, "%s: no job script given\n", progname);
    usage(stderr);
    return 2;
  }
  if (o.compare && !o.timeline) {
    fprintf(stderr, "%s: --compare needs --timeline FILE\n", progname);
    usage(stderr);
    return 2;
  }
  if (o.timeline) { /* before the job runs, not after it */
    char err[600];
    if (lwm_timeline_check(o.luadir, o.timeline, err, sizeof err) != 0) {
      fprintf(stderr, "%s: --timeline %s: %s\n", progname, o.timeline, err);
      return 2;
    }
  }
  o.script_index = i;
  if (strcmp(argv[i], "-") == 0 && read_stdin_script(&o) != 0) return 1;
  if (!o.timeline) {
    int code = run_job(&o, argv[i]);
    free(o.stdin_src);
    return code;
  }
  /* the run(s) with a recorder each, then one picture */
  wm_timeline *tls[2] = {NULL, NULL};
  const char *scripts[2] = {argv[i], o.compare};
  int n = o.compare ? 2 : 1, code = 0;
  for (int k = 0; k < n && code == 0; k++) {
    if (!(tls[k] = wm_timeline_new(scripts[k]))) {
      fprintf(stderr, "%s: out of memory\n", progname);
      code = 1;
      break;
    }
    if (n == 2) /* two panels share the page's size budget */
      wm_timeline_set_limits(tls[k], &(wm_timeline_limits){7500, 3000, 4000, 1500, 1500});
    o.tl = tls[k];
    code = run_job(&o, scripts[k]);
  }
  if (code == 0) {
    char err[600];
    if (lwm_timeline_save(o.luadir, tls, n, o.timeline_x ? "time" : "order", o.timeline, err,
                          sizeof err) != 0) {
      fprintf(stderr, "%s: --timeline %s: %s\n", progname, o.timeline, err);
      code = 1;
    } else if (n == 2) {
      for (int k = 0; k < n; k++) {
        wm_timeline_stats st;
        wm_timeline_stats_get(tls[k], &st);
        fprintf(stderr, "%s: %s: %llu late records, %llu late firings, mean firing delay %.0f ms\n",
                progname, scripts[k], (unsigned long long)(st.late_dropped + st.late_side),
                (unsigned long long)st.late_firings, st.mean_firing_delay);
      }
    }
  }
  wm_timeline_free(tls[0]);
  wm_timeline_free(tls[1]);
  free(o.stdin_src);
  return code;
}

/* lwm_set_spawn allocates: run under lua_pcall, so that running out of memory is an error. */
static int set_spawn(lua_State *L) {
  lwm_set_spawn(L, lua_touserdata(L, 1));
  return 0;
}

/* Runs one job script in a fresh Lua state; the exit status. */
static int run_job(options *po, const char *script) {
  options o0 = *po;
  options *o = &o0;
  o->script = script;
  const char *why;
  lua_State *L = lwm_new_state(&why);
  if (!L) {
    fprintf(stderr, "%s: cannot create the Lua state: %s\n", progname, why);
    return 1;
  }
  lwm_spawn spawn = {.run = run_worker, .ud = o};
  lua_pushcfunction(L, set_spawn);
  lua_pushlightuserdata(L, &spawn);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    fprintf(stderr, "%s: %s\n", progname, lua_tostring(L, -1));
    lwm_close_state(L);
    return 1;
  }
  lua_pushcfunction(L, msghandler);
  lua_pushcfunction(L, pmain);
  lua_pushlightuserdata(L, o);
  int status = lua_pcall(L, 1, 0, 1);
  int code = 0;
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    /* the message handler adds a traceback: compare the first line only */
    if (msg && strncmp(msg, "wmrun: interrupted", 18) == 0 && (msg[18] == '\0' || msg[18] == '\n')) {
      code = 130;
    } else {
      fprintf(stderr, "%s: %s\n", progname, msg ? msg : "(error object is not a string)");
      code = 1;
    }
  }
  /* output that could not be written (a full disk, /dev/full; Lua's print too) is an error */
  errno = 0;
  if ((fflush(stdout) != 0 || ferror(stdout)) && code == 0) {
    int e = errno;
    fprintf(stderr, "%s: cannot write to standard output: %s\n", progname,
            e ? strerror(e) : "write error");
    code = 1;
  }
  lwm_close_state(L);
  return code;
}
