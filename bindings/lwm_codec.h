/* Lua values as bytes (lwm_codec.c): the record codec's host for Lua tables, below the
 * builders, checkpoints and the multi-core executor that use it. */
#ifndef LWM_CODEC_H
#define LWM_CODEC_H

#include "lwm.h"

/* The codec host of B's Lua values (tables held in slots), for wm_ctx_snapshot /
 * wm_ctx_restore (graph/wm_snapshot.h): nil, booleans, integers, floats (bit for bit,
 * -0.0 and nan too), strings (any bytes) and tables of those, nested up to 100 levels.
 * A function, userdata, coroutine, a table used as a key or a cycle is an error that says
 * where in the value it is ("it holds a function (at value.acc.f)"). Fills *ch
 * (base/wm_codec.h; not included here: its wm_decoder is not the parsers'). */
struct wm_codec_host;
void lwm_codec_host(lwm_bridge *B, struct wm_codec_host *ch);
/* The same for records crossing threads (errors name the value "record", not "value"). */
void lwm_codec_host_records(lwm_bridge *B, struct wm_codec_host *ch);
/* Appends the Lua value at idx (any type) to b; root names it in errors ("state"). 0, or
 * -1 with the failure in *err (NULL: none wanted). */
int lwm_encode_lua(lua_State *L, wm_buf *b, int idx, const char *root, wm_error *err);
/* Pushes the value encoded at *p (advanced past it). 0, or -1 (nothing pushed) with the
 * failure in *err (truncated or corrupt bytes). */
int lwm_decode_lua(lua_State *L, const uint8_t **p, const uint8_t *end, wm_error *err);
/* wm.core._codec_roundtrip(v) -> copy, bytes | fail, message: the encoding through Lua,
 * for the specs. */
int lwm_codec_roundtrip(lua_State *L);

#endif
