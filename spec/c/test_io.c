/* The source interface on a real executor: the positions a file source publishes (line
 * numbers and byte offsets of line starts, also across reads and "\r\n"), and a TCP
 * connection reset by the peer, which is an error naming the address, not an end. */
#include <stdlib.h>
#include <unistd.h>

#include "exec/wm_exec.h"
#include "io/wm_io.h"
#include "test.h"

typedef struct resetter resetter;
static void reset_now(resetter *r);

/* A sink that notes "line@offset:text" of every record from ctx->pos; with a resetter, the
 * record "b" makes the peer reset the connection. */
typedef struct possink {
  wm_buf seen;
  resetter *r;
} possink;

static int pos_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  possink *ps = op->impl;
  wm_buf *b = &ps->seen;
  const wm_pos *p = op->ctx->pos;
  if (!p) {
    wm_buf_adds(b, "nopos:");
  } else {
    wm_buf_add_int(b, (int64_t)p->line);
    wm_buf_addc(b, '@');
    wm_buf_add_int(b, (int64_t)p->offset);
    wm_buf_addc(b, ':');
  }
  size_t n;
  const char *s = wm_value_str(rec, &n);
  wm_buf_add(b, s, n);
  wm_buf_addc(b, ';');
  if (ps->r && n == 1 && s[0] == 'b') reset_now(ps->r);
  return WM_OK;
}

static const wm_op_vt pos_vt = {.kind = "positions", .record = pos_record};

static void test_file_positions(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/lines.txt", dir);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  fputs("ab\r\ncd\n\nlast", f);
  fclose(f);
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  possink ps = {.r = NULL};
  wm_buf_init(&ps.seen);
  wm_lines_config lc = {.path = path, .chunk = 3}; /* lines split across reads */
  wm_op *src = wm_lines_new(wm_exec_host(e), "read", &lc);
  wm_op *sink = wm_op_new(&ctx, &pos_vt, &ps, "sink");
  CHECK(src && sink);
  if (src && sink) {
    wm_op_connect(src, 0, sink);
    CHECK(wm_ctx_prepare(&ctx) == WM_OK);
    CHECK(wm_exec_run(e) == WM_OK);
    CHECK_STR(ps.seen.data, "1@0:ab;2@4:cd;3@7:;4@8:last;");
    CHECK(ctx.pos == NULL); /* published only while a record is emitted */
  }
  /* the context first, the executor second (bindings do it in this order) */
  wm_ctx_free(&ctx);
  wm_exec_free(e);
  wm_buf_free(&ps.seen);
  remove(path);
}

/* ---- a peer that resets the connection ------------------------------------------------- */

struct resetter {
  uv_tcp_t server, conn;
  uv_write_t w;
  int conn_open;
};

/* Once the reader has framed "a" and "b" (and holds "part"): RST instead of FIN. */
static void reset_now(resetter *r) {
  if (!r->conn_open) return;
  r->conn_open = 0;
  CHECK(uv_tcp_close_reset(&r->conn, NULL) == 0);
}

static void on_reset_written(uv_write_t *req, int status) {
  (void)req;
  CHECK(status == 0);
}

static void on_reset_conn(uv_stream_t *server, int status) {
  resetter *r = server->data;
  if (status < 0 || uv_tcp_init(server->loop, &r->conn) != 0) return;
  r->conn_open = 1;
  if (uv_accept(server, (uv_stream_t *)&r->conn) != 0) return;
  static char text[] = "a\nb\npart";
  uv_buf_t b = uv_buf_init(text, sizeof text - 1);
  r->w.data = r;
  uv_write(&r->w, (uv_stream_t *)&r->conn, &b, 1, on_reset_written);
  uv_close((uv_handle_t *)&r->server, NULL); /* one client */
}

static void test_socket_reset(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  resetter r = {0};
  struct sockaddr_in a;
  uv_ip4_addr("127.0.0.1", 0, &a);
  CHECK(uv_tcp_init(wm_exec_loop(e), &r.server) == 0);
  r.server.data = &r;
  CHECK(uv_tcp_bind(&r.server, (const struct sockaddr *)&a, 0) == 0);
  CHECK(uv_listen((uv_stream_t *)&r.server, 4, on_reset_conn) == 0);
  struct sockaddr_in bound;
  int len = sizeof bound;
  uv_tcp_getsockname(&r.server, (struct sockaddr *)&bound, &len);
  int port = ntohs(bound.sin_port);
  possink ps = {.r = &r};
  wm_buf_init(&ps.seen);
  wm_tcp_config tc = {.host = "127.0.0.1", .port = port};
  wm_op *src = wm_socket_lines_new(wm_exec_host(e), "socket", &tc);
  wm_op *sink = wm_op_new(&ctx, &pos_vt, &ps, "sink");
  CHECK(src && sink);
  if (src && sink) {
    wm_op_connect(src, 0, sink);
    CHECK(wm_ctx_prepare(&ctx) == WM_OK);
    int rrc = wm_exec_run(e);
    CHECK(rrc == WM_ERR);
    if (rrc != WM_ERR) fprintf(stderr, "  rc %d seen %s\n", rrc, ps.seen.data ? ps.seen.data : "");
    char want[128];
    snprintf(want, sizeof want, "cannot read 127.0.0.1:%d: connection reset by peer", port);
    CHECK(strstr(ctx.err, want) != NULL);
    if (!strstr(ctx.err, want)) fprintf(stderr, "  got: %s\n", ctx.err);
    CHECK_STR(ps.seen.data, "1@0:a;2@2:b;"); /* the cut line "part" is no record */
  }
  wm_exec_free(e); /* the executor first this time: the order does not matter */
  wm_ctx_free(&ctx);
  wm_buf_free(&ps.seen);
}

void test_io(void) {
  char dir[] = "/tmp/wm_test_io.XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  test_file_positions(dir);
  rmdir(dir);
  test_socket_reset();
}
