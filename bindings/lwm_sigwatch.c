/* core.signal_watch(): SIGINT, SIGTERM and SIGHUP during `wmrun lab` (lwm_sigwatch.h). */
#include <signal.h>
#include <string.h>

#include "lwm_sigwatch.h"

/* A lab is no job: it has no executor of its own to drain, and each candidate's harness lives
 * for one replay. The watch is an executor listed with the process's signal handler
 * (wm_exec_watch_signals) for as long as it is open, whose loop never runs: a signal stays
 * pending on it, and what is given the watch (core.replay_data, h:replay's opts.watch) stops
 * with "interrupted by SIGINT" (a second signal exits 130 at once, from the handler). Until it
 * is open, the process's dispositions are those it inherited (a background process of a
 * script ignores SIGINT, as under `lab ... &`). */
const char *lwm_sig_text(int sig) {
  return sig == SIGTERM ? "interrupted by SIGTERM"
         : sig == SIGHUP ? "interrupted by SIGHUP"
                         : "interrupted by SIGINT";
}

static int l_sigwatch_close(lua_State *L) {
  sigwatch *W = luaL_checkudata(L, 1, SIGWATCH_MT);
  if (W->exec) {
    wm_exec_free(W->exec);
    W->exec = NULL;
    wm_ctx_free(&W->ctx);
  }
  return 0;
}

/* w:pending() -> "interrupted by SIGINT" (SIGTERM, SIGHUP) once a signal came, else nil */
static int l_sigwatch_pending(lua_State *L) {
  sigwatch *W = luaL_checkudata(L, 1, SIGWATCH_MT);
  if (W->exec && wm_exec_signal_pending(W->exec)) lua_pushstring(L, lwm_sig_text(wm_exec_signal(W->exec)));
  else lua_pushnil(L);
  return 1;
}

int lwm_signal_watch_new(lua_State *L) {
  sigwatch *W = lua_newuserdatauv(L, sizeof *W, 0);
  memset(W, 0, sizeof *W);
  if (luaL_newmetatable(L, SIGWATCH_MT)) {
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, l_sigwatch_pending);
    lua_setfield(L, -2, "pending");
    lua_pushcfunction(L, l_sigwatch_close);
    lua_setfield(L, -2, "close");
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_sigwatch_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_sigwatch_close);
    lua_setfield(L, -2, "__close");
  }
  lua_setmetatable(L, -2);
  wm_ctx_init(&W->ctx);
  wm_exec_config cfg = {.watermark_interval = 0};
  W->exec = wm_exec_new(&W->ctx, &cfg);
  if (!W->exec || wm_exec_watch_signals(W->exec) != WM_OK) {
    lua_pushstring(L, wm_ctx_errtext(&W->ctx));
    if (W->exec) wm_exec_free(W->exec);
    W->exec = NULL;
    wm_ctx_free(&W->ctx);
    return lua_error(L);
  }
  return 1;
}
