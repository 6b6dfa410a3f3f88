/* The source interface on a real executor: the positions a file source publishes (line
 * numbers and byte offsets of line starts, also across reads and "\r\n"), its snapshot and
 * restore, and a TCP connection reset by the peer, which is an error naming the address,
 * not an end. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/wm_exec.h"
#include "io/wm_csv.h"
#include "io/wm_lines.h"
#include "ops/wm_tsop.h"
#include "ops/wm_winop.h"
#include "io/wm_io.h"
#include "test.h"

typedef struct resetter resetter;
static void reset_now(resetter *r);

/* A sink that notes "line@offset:text" of every record from ctx->pos; with a resetter, the
 * record "b" makes the peer reset the connection. */
typedef struct possink {
  wm_buf seen;
  resetter *r;
  wm_exec *e;    /* with a source: the record "b" takes a snapshot of it into snap */
  wm_op *src;
  wm_buf snap;
  uv_tcp_t *reset_tcp; /* a client to reset at the record "x" */
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
  if (ps->reset_tcp && n == 1 && s[0] == 'x') {
    CHECK(uv_tcp_close_reset(ps->reset_tcp, NULL) == 0);
    ps->reset_tcp = NULL;
  }
  if (ps->e && n == 1 && s[0] == 'b') CHECK(wm_exec_snapshot_source(ps->e, ps->src, &ps->snap) == WM_OK);
  return WM_OK;
}

static const wm_op_vt pos_vt = {.kind = "positions", .record = pos_record};

/* Runs a file source over path (read chunk bytes at a time; 0: the default); restores it from
 * restore first when given; notes positions
 * (and snapshots at "b" when take is set). The run's result; ctx.err copied to err. */
static int run_part(const char *path, size_t chunk, int part, int parts, const wm_buf *restore,
                    wm_buf *seen, wm_buf *take, char *err, size_t errlen) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  possink ps = {.r = NULL};
  wm_buf_init(&ps.seen);
  wm_buf_init(&ps.snap);
  wm_lines_config lc = {.path = path, .chunk = chunk, .part = part, .parts = parts};
  wm_op *src = wm_lines_new(wm_exec_host(e), "read", &lc);
  wm_op *sink = wm_op_new(&ctx, &pos_vt, &ps, "sink");
  int rc = WM_ERR;
  if (take) {
    ps.e = e;
    ps.src = src;
  }
  if (src && sink && wm_op_connect(src, 0, sink) >= 0 && wm_ctx_prepare(&ctx) == WM_OK &&
      (!restore || wm_exec_restore_source(e, src, restore->data, restore->len) == WM_OK))
    rc = wm_exec_run(e);
  CHECK(ctx.pos == NULL); /* published only while a record is emitted */
  snprintf(err, errlen, "%s", wm_ctx_errtext(&ctx));
  /* the context first, the executor second (bindings do it in this order) */
  wm_ctx_free(&ctx);
  wm_exec_free(e);
  wm_buf_add(seen, ps.seen.data ? ps.seen.data : "", ps.seen.len);
  if (take) wm_buf_add(take, ps.snap.data ? ps.snap.data : "", ps.snap.len);
  wm_buf_free(&ps.seen);
  wm_buf_free(&ps.snap);
  return rc;
}

static int run_file(const char *path, size_t chunk, const wm_buf *restore, wm_buf *seen,
                    wm_buf *take, char *err, size_t errlen) {
  return run_part(path, chunk, 0, 1, restore, seen, take, err, errlen);
}

/* A file read in parts (read_lines{parallel = true}): every line in exactly one part, in
 * order, with the line number and offset it has when the file is read whole; for files
 * with lines split across reads, empty lines, "\r\n", a line longer than a part, a last
 * line without "\n", a file shorter than the number of parts and an empty file. */
/* Writes (mode "wb") or appends ("ab") text to path; 0 (a failed check) when it cannot. */
static int put_file(const char *path, const char *mode, const char *text) {
  FILE *f = fopen(path, mode);
  CHECK(f != NULL);
  if (!f) return 0;
  fputs(text, f);
  fclose(f);
  return 1;
}

/* Reads path whole, then in 2 to maxparts parts with each of the chunks: the parts' lines,
 * one after the other, must be the whole file's (numbers, offsets, texts). The whole
 * file's notes' length (0 on failure). */
static size_t check_parts(const char *path, const size_t *chunks, size_t nchunks, int maxparts) {
  char err[4096];
  wm_buf whole;
  wm_buf_init(&whole);
  CHECK(run_file(path, 0, NULL, &whole, NULL, err, sizeof err) == WM_OK);
  const char *w = whole.data ? whole.data : "";
  for (int parts = 2; parts <= maxparts; parts++)
    for (size_t ci = 0; ci < nchunks; ci++) {
      wm_buf all;
      wm_buf_init(&all);
      for (int k = 0; k < parts; k++)
        CHECK(run_part(path, chunks[ci], k, parts, NULL, &all, NULL, err, sizeof err) == WM_OK);
      if (strcmp(all.data ? all.data : "", w) != 0) {
        fprintf(stderr, "%s, %d parts, chunk %zu: %.200s, whole: %.200s\n", path, parts,
                chunks[ci], all.data ? all.data : "", w);
        CHECK(0);
      } else {
        CHECK(1);
      }
      wm_buf_free(&all);
    }
  size_t n = whole.len;
  wm_buf_free(&whole);
  return n;
}

static void test_file_parts(const char *dir) {
  static const char *const files[] = {
      "ab\r\ncd\n\nlast", "a\nb\nc\nd\ne\nf\ng\n", "\n\n\n", "a", "a\n", "",
      "x\na-line-longer-than-a-part-of-the-file-is-read-by-one-part\ny\nz", "\nab\n\ncd\n",
  };
  static const size_t chunks[] = {1, 2, 3, 7, 0};
  char path[512], err[4096];
  snprintf(path, sizeof path, "%s/parts.txt", dir);
  for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
    if (!put_file(path, "wb", files[fi])) return;
    check_parts(path, chunks, sizeof chunks / sizeof chunks[0], 5);
  }
  /* a file of 3000 lines (20 kB): the lines before a part's range are counted in blocks of
   * 240 bytes and read in reads 16 times the chunk (up to 4 MiB); every line number must
   * still be the whole file's */
  FILE *big = fopen(path, "wb");
  CHECK(big != NULL);
  if (!big) return;
  for (int i = 0; i < 3000; i++) fprintf(big, i % 7 == 0 ? "\n" : "line-%d\n", i);
  fclose(big);
  static const size_t bigchunks[] = {7, 1000, 0};
  /* "line@offset:text;" for each of the 3000 lines */
  CHECK(check_parts(path, bigchunks, sizeof bigchunks / sizeof bigchunks[0], 4) > 30000);
  /* spelled out: 9 bytes in two parts, [0, 4) and [4, 9): "xx" starts at 2, in part 1's
   * range, so part 1 starts at "b" (offset 5), line 3 */
  if (!put_file(path, "wb", "a\nxx\nb\nc\n")) return;
  wm_buf seen, snap;
  wm_buf_init(&seen);
  wm_buf_init(&snap);
  CHECK(run_part(path, 0, 0, 2, NULL, &seen, NULL, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "1@0:a;2@2:xx;");
  wm_buf_clear(&seen);
  CHECK(run_part(path, 2, 1, 2, NULL, &seen, &snap, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "3@5:b;4@7:c;");
  /* part 1's checkpoint at "b": restored, it goes on at "c" with its line number */
  wm_buf_clear(&seen);
  CHECK(run_part(path, 0, 1, 2, &snap, &seen, NULL, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "4@7:c;");
  /* into another part, or a source that reads the whole file: an error that says so */
  CHECK(run_part(path, 0, 0, 2, &snap, &seen, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "the checkpoint is of part 2 of 2, this source reads part 1 of 2") != NULL);
  CHECK(run_file(path, 0, &snap, &seen, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "the checkpoint is of part 2 of 2, this source reads part 1 of 1") != NULL);
  /* and a whole-file checkpoint into a part */
  wm_buf_clear(&snap);
  CHECK(run_file(path, 0, NULL, &seen, &snap, err, sizeof err) == WM_OK);
  CHECK(run_part(path, 0, 1, 2, &snap, &seen, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "the checkpoint is of part 1 of 1, this source reads part 2 of 2") != NULL);
  /* the ranges are those of the checkpoint's size: part 0 of "b\nxx\na\nc\n" (9 bytes)
   * ends after "xx"; checkpointed at "b", then the file grows to 21 bytes (whose part 0
   * is all of it), restored part 0 still ends after "xx" */
  wm_buf_clear(&snap);
  if (!put_file(path, "wb", "b\nxx\na\nc\n")) return;
  wm_buf_clear(&seen);
  CHECK(run_part(path, 0, 0, 2, NULL, &seen, &snap, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "1@0:b;2@2:xx;");
  if (!put_file(path, "ab", "ddddddddddd\n")) return;
  wm_buf_clear(&seen);
  CHECK(run_part(path, 0, 0, 2, NULL, &seen, NULL, err, sizeof err) == WM_OK);
  /* unrestored: the new size's range [0, 10) holds every line start */
  CHECK_STR(seen.data, "1@0:b;2@2:xx;3@5:a;4@7:c;5@9:ddddddddddd;");
  wm_buf_clear(&seen);
  CHECK(run_part(path, 0, 0, 2, &snap, &seen, NULL, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "2@2:xx;");
  wm_buf_free(&seen);
  wm_buf_free(&snap);
  remove(path);
}

static void test_file_positions(const char *dir) {
  char path[512], err[4096];
  snprintf(path, sizeof path, "%s/lines.txt", dir);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  fputs("ab\r\ncd\n\nlast", f);
  fclose(f);
  wm_buf seen;
  wm_buf_init(&seen);
  CHECK(run_file(path, 3, NULL, &seen, NULL, err, sizeof err) == WM_OK); /* lines split across reads */
  CHECK_STR(seen.data, "1@0:ab;2@4:cd;3@7:;4@8:last;");
  wm_buf_free(&seen);
  remove(path);
}

static void test_file_checkpoint(const char *dir) {
  char path[512], other[512], err[4096];
  snprintf(path, sizeof path, "%s/ck.txt", dir);
  snprintf(other, sizeof other, "%s/other.txt", dir);
  FILE *f = fopen(path, "wb"), *g = fopen(other, "wb");
  CHECK(f && g);
  if (!f || !g) return;
  fputs("a\nb\nc\n", f);
  fputs("a\nb\nc\n", g);
  fclose(f);
  fclose(g);
  wm_buf seen, snap;
  wm_buf_init(&seen);
  wm_buf_init(&snap);
  CHECK(run_file(path, 0, NULL, &seen, &snap, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "1@0:a;2@2:b;3@4:c;");
  CHECK(snap.len > 0);
  /* restored: on at the first line not emitted when "b" was, numbered as before */
  wm_buf_clear(&seen);
  CHECK(run_file(path, 0, &snap, &seen, NULL, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "3@4:c;");
  /* the same bytes in another file (another inode) are not the checkpoint's file */
  CHECK(run_file(other, 0, &snap, &seen, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "it is not the file of the checkpoint") != NULL);
  /* a damaged position */
  snap.len--;
  CHECK(run_file(path, 0, &snap, &seen, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "the checkpoint's position is damaged") != NULL);
  wm_buf_free(&seen);
  wm_buf_free(&snap);
  remove(path);
  remove(other);
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
    CHECK(strstr(wm_ctx_errtext(&ctx), want) != NULL);
    if (!strstr(wm_ctx_errtext(&ctx), want)) fprintf(stderr, "  got: %s\n", wm_ctx_errtext(&ctx));
    CHECK_STR(ps.seen.data, "1@0:a;2@2:b;"); /* the cut line "part" is no record */
  }
  wm_exec_free(e); /* the executor first this time: the order does not matter */
  wm_ctx_free(&ctx);
  wm_buf_free(&ps.seen);
}

/* A listen_lines client whose connection is reset: that client's cut line is no record, and
 * the source goes on (here it ends: it was the only client it waited for). */
typedef struct rclient {
  uv_tcp_t tcp;
  uv_connect_t conn;
  uv_write_t w;
} rclient;

static void on_rclient_written(uv_write_t *req, int status) {
  (void)req;
  CHECK(status == 0);
}

static void on_rclient_connected(uv_connect_t *req, int status) {
  rclient *c = req->data;
  CHECK(status == 0);
  if (status != 0) return;
  static char text[] = "x\npart";
  uv_buf_t b = uv_buf_init(text, sizeof text - 1);
  uv_write(&c->w, (uv_stream_t *)&c->tcp, &b, 1, on_rclient_written);
}

static void test_listen_reset(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  wm_tcp_config tc = {.host = "127.0.0.1", .port = 0, .max_clients = 1, .quiet = 1};
  wm_op *src = wm_listen_lines_new(wm_exec_host(e), "listen", &tc);
  possink ps = {.r = NULL};
  wm_buf_init(&ps.seen);
  wm_op *sink = wm_op_new(&ctx, &pos_vt, &ps, "sink");
  rclient c;
  memset(&c, 0, sizeof c);
  CHECK(src && sink);
  if (src && sink) {
    wm_op_connect(src, 0, sink);
    CHECK(wm_ctx_prepare(&ctx) == WM_OK);
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", wm_listen_lines_port(src), &a);
    CHECK(uv_tcp_init(wm_exec_loop(e), &c.tcp) == 0);
    c.conn.data = &c;
    CHECK(uv_tcp_connect(&c.conn, &c.tcp, (const struct sockaddr *)&a, on_rclient_connected) == 0);
    ps.reset_tcp = &c.tcp; /* reset once "x" was framed (and "part" is held) */
    CHECK(wm_exec_run(e) == WM_OK);
    CHECK_STR(ps.seen.data, "1@0:x;");
  }
  wm_ctx_free(&ctx);
  wm_exec_free(e);
  wm_buf_free(&ps.seen);
}

/* The C side checks chunk too (a caller that is not lua/wm): an error naming it, not an
 * attempt to allocate it. */
static void test_chunk_range(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  wm_lines_config lc = {.path = "-", .chunk = (size_t)-1};
  CHECK(wm_lines_new(wm_exec_host(e), "read_lines (job.lua:3)", &lc) == NULL);
  CHECK(strstr(wm_ctx_errtext(&ctx), "read_lines (job.lua:3): chunk must be at most 67108864 bytes (64 MiB)") != NULL);
  wm_tcp_config tc = {.host = "127.0.0.1", .port = 1, .chunk = ((size_t)64 << 20) + 1};
  CHECK(wm_socket_lines_new(wm_exec_host(e), "socket_lines", &tc) == NULL);
  CHECK(strstr(wm_ctx_errtext(&ctx), "socket_lines: chunk must be at most") != NULL);
  wm_ctx_free(&ctx);
  wm_exec_free(e);
}

/* The CSV decoder's one-pass path for plain lines (wm_csv.c csv_plain) and the general
 * loop it leaves every other line to: each line's fields as "s|a|b" (or "error: ..."),
 * written out by hand; short lines (under 16 bytes), a 17-byte string, 18 and 19 digits,
 * quotes, blanks, signs, empty fields, too few and too many fields; a string of the
 * reused row held elsewhere is never written over; a longer string than the row's room. */
static void decode_line(wm_decoder *dec, wm_op *op, const char *line, wm_buf *got) {
  wm_value out = wm_nil();
  wm_error err;
  wm_error_clear(&err);
  int rc = dec->decode(dec->ud, op, line, strlen(line), &out, &err);
  if (rc != 0) {
    wm_buf_adds(got, "error: ");
    wm_buf_adds(got, err.msg);
  } else {
    const wm_row *r = out.u.row;
    for (uint32_t i = 0; i < r->schema->nfields; i++) {
      const wm_value *f = &r->fields[i];
      if (i) wm_buf_addc(got, '|');
      if (f->type == WM_INT) wm_buf_add_int(got, f->u.i);
      else if (f->type == WM_NIL) wm_buf_adds(got, "nil");
      else if (wm_value_is_string(f)) {
        size_t n;
        const char *b = wm_value_str(f, &n);
        wm_buf_add(got, b, n);
      } else wm_buf_adds(got, "?");
    }
    wm_row_release(NULL, out.u.row);
  }
  wm_buf_addc(got, '\n');
}

static void test_csv_plain(void) {
  T.current = "csv plain lines";
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *op = wm_op_new(&ctx, &capture_vt, NULL, "parse");
  const wm_csv_field cols[] = {{"s", WM_FT_STRING, 0, 0}, {"a", WM_FT_INTEGER, 0, 0},
                               {"b", WM_FT_INTEGER, 1, 0}};
  wm_decoder dec;
  CHECK_I64(wm_decoder_csv(&dec, cols, 3, ','), 0);
  static const char *const lines[] = {
      "k1,1,2",
      "abcdefghijklmnopq,123456789012345678,7",
      "x,1234567890123456789,1",
      "x, 5,1",
      "\"q,x\",5,1",
      ",5,1",
      "x,5,",
      "x,5",
      "x,5,1,2",
      "x,5,1,",
      "x,-5,+1",
      "x,5a,1",
      "x,,1",
      "k000042,1700000000123,57",
      "k2,12345678,1",
      "k3,123456789,22",
      "k4,1,123456789012",
      "k5,1234,9876",
      "k6,99999999999,1",
  };
  const char *want =
      "k1|1|2\n"
      "abcdefghijklmnopq|123456789012345678|7\n"
      "x|1234567890123456789|1\n"
      "x|5|1\n"
      "q,x|5|1\n"
      "|5|1\n"
      "x|5|nil\n"
      "error: expected 3 fields, got 2\n"
      "error: expected 3 fields, got 4\n"
      "error: expected 3 fields, got 4\n"
      "x|-5|1\n"
      "error: field 'a': '5a' is not an integer\n"
      "error: field 'a' is empty\n"
      "k000042|1700000000123|57\n"
      "k2|12345678|1\n"
      "k3|123456789|22\n"
      "k4|1|123456789012\n"
      "k5|1234|9876\n"
      "k6|99999999999|1\n";
  wm_buf got;
  wm_buf_init(&got);
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) decode_line(&dec, op, lines[i], &got);
  CHECK_STR(got.data, want);

  /* the row's string held elsewhere: the next line gets a new string */
  wm_value out = wm_nil();
  wm_error err;
  const char *l1 = "abc,1,2", *l2 = "xyz,3,4";
  CHECK_I64(dec.decode(dec.ud, op, l1, strlen(l1), &out, &err), 0);
  wm_str *held = out.u.row->fields[0].u.s;
  held->refs++;
  wm_row_release(NULL, out.u.row);
  wm_buf_clear(&got);
  decode_line(&dec, op, l2, &got);
  decode_line(&dec, op, "abcdefghijklmnopqrstuvwxyz0123456789,5,6", &got);
  decode_line(&dec, op, "b,7,8", &got);
  CHECK_STR(got.data, "xyz|3|4\nabcdefghijklmnopqrstuvwxyz0123456789|5|6\nb|7|8\n");
  CHECK_STR(held->data, "abc");
  CHECK_I64(held->len, 3);
  free(held); /* the last reference */
  wm_buf_free(&got);
  dec.free(dec.ud);
  wm_ctx_free(&ctx);
}

/* Projection pushdown (wm_csv_field.skip): skipped columns are nil in every row and their
 * text is not checked (a malformed integer, an unterminated-looking value, a quoted field
 * with the separator and "" escapes), on the plain path (string/integer lines, after the
 * first row sized the strings) and the general one; the field count and the used columns
 * are still checked. The same lines without skip show what the skip changes. */
static void test_csv_skip(void) {
  T.current = "csv skip (projection pushdown)";
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *op = wm_op_new(&ctx, &capture_vt, NULL, "parse");
  static const char *const lines[] = {
      "k1,1,2,long text here",
      "k2,3,4,t",
      "k3,zz,5,t",
      "k4,6,7,\"a,\"\"b\"\"\"",
      "k5,\"8\",9,t",
      "k6,1,x,t",
      "k7,1,2",
      "k8,1,2,t,u",
      "k9,,3,",
  };
  const char *want_skip =
      "k1|nil|2|nil\n"
      "k2|nil|4|nil\n"
      "k3|nil|5|nil\n"
      "k4|nil|7|nil\n"
      "k5|nil|9|nil\n"
      "error: field 'b': 'x' is not an integer\n"
      "error: expected 4 fields, got 3\n"
      "error: expected 4 fields, got 5\n"
      "k9|nil|3|nil\n";
  const char *want_all =
      "k1|1|2|long text here\n"
      "k2|3|4|t\n"
      "error: field 'a': 'zz' is not an integer\n"
      "k4|6|7|a,\"b\"\n"
      "k5|8|9|t\n"
      "error: field 'b': 'x' is not an integer\n"
      "error: expected 4 fields, got 3\n"
      "error: expected 4 fields, got 5\n"
      "error: field 'a' is empty\n";
  for (int skip = 1; skip >= 0; skip--) {
    wm_csv_field cols[] = {{"s", WM_FT_STRING, 0, 0}, {"a", WM_FT_INTEGER, 0, 0}, {"b", WM_FT_INTEGER, 0, 0},
                           {"t", WM_FT_STRING, 0, 0}};
    cols[1].skip = cols[3].skip = (uint8_t)skip;
    wm_decoder dec;
    CHECK_I64(wm_decoder_csv(&dec, cols, 4, ','), 0);
    wm_buf got;
    wm_buf_init(&got);
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) decode_line(&dec, op, lines[i], &got);
    CHECK_STR(got.data, skip ? want_skip : want_all);
    wm_buf_free(&got);
    dec.free(dec.ud);
  }
  wm_ctx_free(&ctx);
}

/* Lookahead (wm_lines.c, wm_parse_lookahead): lines framed from a buffer into parse_csv,
 * with_timestamp_field and a tumbling sum keyed by id, with 70 000 windows open (past
 * wm_winop_wants_hints' threshold): hints are given, and change nothing: every window's sum,
 * first record and order as written out here; a bad line among the hinted ones fails with
 * its position; a quoted key and a short line among them are read as without hints. */
static void test_lookahead(void) {
  T.current = "lookahead";
  enum { K = 70000 };
  for (int bad = 0; bad < 2; bad++) {
    wm_ctx ctx;
    wm_ctx_init(&ctx);
    wm_op *src = wm_op_new(&ctx, &capture_vt, NULL, "src");
    const wm_csv_field cols[] = {{"id", WM_FT_STRING, 0, 0}, {"ts", WM_FT_INTEGER, 0, 0},
                                 {"vc", WM_FT_INTEGER, 0, 0}};
    wm_parse_config pc = {.on_error = WM_PARSE_FAIL, .what = "parse_csv"};
    CHECK_I64(wm_decoder_csv(&pc.dec, cols, 3, ','), 0);
    wm_op *parse = wm_parse_new(&ctx, "parse", &pc);
    wm_tsop_config tc = {.builtin = WM_GEN_BOUNDED, .delay = 2000, .interval = 0};
    CHECK_I64(wm_tsx_field(&tc.tsx, "ts", 1), 0);
    wm_op *ts = wm_tsop_new(&ctx, "timestamps", &tc);
    wm_winop_config wc = {0};
    wc.assigner.kind = WM_WA_TUMBLING;
    wc.assigner.size = 5000;
    const char *key = "id";
    wm_keysel_fields(&wc.keysel, &key, 1);
    wm_winfn_builtin(&wc.fn, WM_AGG_SUM, "vc");
    wm_op *w = wm_winop_new(&ctx, "window", &wc);
    capture out = {0};
    wm_buf_init(&out.out);
    wm_op_connect(src, 0, parse);
    wm_op_connect(parse, 0, ts);
    wm_op_connect(ts, 0, w);
    wm_op_connect(w, 0, wm_op_new(&ctx, &capture_vt, &out, "out"));
    CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
    wm_buf in;
    wm_buf_init(&in);
    char line[64];
    for (int pass = 0; pass < 2; pass++) {
      for (int k = 0; k < K; k++) {
        if (k == 5 && pass == 1) {
          wm_buf_adds(&in, "\"k5\",2000,2\n"); /* quoted: no hint, the same key */
          continue;
        }
        if (k == 7 && pass == 1 && bad) wm_buf_adds(&in, "k7,2x00,2\n"); /* line K + 8 */
        snprintf(line, sizeof line, "k%d,%d,%d\n", k, 1000 + pass * 1000, pass + 1);
        wm_buf_adds(&in, line);
      }
    }
    wm_buf_adds(&in, "z,9000,1\n");
    wm_srchead h = {0};
    h.op = src;
    wm_framer f;
    wm_framer_init(&f, "data.csv", 0);
    int rc = WM_OK;
    for (size_t at = 0; at < in.len && rc == WM_OK; at += 65536) {
      size_t n = in.len - at < 65536 ? in.len - at : 65536;
      rc = wm_framer_feed(&h, &f, in.data + at, n);
    }
    if (bad) {
      CHECK_I64(rc, WM_ERR);
      CHECK(strstr(wm_ctx_errtext(&ctx), "data.csv:70008: field 'ts': '2x00' is not an integer") != NULL);
    } else {
      CHECK_I64(rc, WM_OK);
      CHECK(wm_parse_lookahead_hints(parse) > K / 2);
      wm_buf want;
      wm_buf_init(&want);
      for (int k = 0; k < K; k++) {
        snprintf(line, sizeof line, "4999 {\"id\":\"k%d\",\"ts\":1000,\"vc\":3}\n", k);
        wm_buf_adds(&want, line);
      }
      CHECK(out.out.data && strcmp(out.out.data, want.data) == 0);
      wm_buf_free(&want);
    }
    wm_framer_drop(&f);
    wm_buf_free(&f.carry);
    wm_buf_free(&in);
    wm_buf_free(&out.out);
    wm_ctx_free(&ctx);
  }
}

/* A sink that pauses the sources (backpressure) at the record "p" and resumes them from a
 * timer; it notes the records and how many came while paused. */
typedef struct pausesink {
  wm_buf seen;
  wm_exec *e;
  uv_timer_t tm;
  int paused, while_paused, resumed;
} pausesink;

static void on_resume(uv_timer_t *t) {
  pausesink *ps = t->data;
  ps->paused = 0;
  ps->resumed++;
  wm_exec_pressure(ps->e, -((int64_t)1 << 40));
}

static int pause_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  pausesink *ps = op->impl;
  size_t n;
  const char *s = wm_value_str(rec, &n);
  wm_buf_add(&ps->seen, s, n);
  wm_buf_addc(&ps->seen, ';');
  if (ps->paused) ps->while_paused++;
  if (n == 1 && s[0] == 'p' && !ps->resumed) {
    ps->paused = 1;
    wm_exec_pressure(ps->e, (int64_t)1 << 40);
    CHECK(uv_timer_start(&ps->tm, on_resume, 30, 0) == 0);
  }
  return WM_OK;
}

static const wm_op_vt pause_vt = {.kind = "pausing", .record = pause_record};

static void on_tm_closed(uv_handle_t *h) { (void)h; }

/* Backpressure on a file source: the file is read ahead (the next chunk's read is in flight
 * while a chunk is framed), so when a paused source's read-ahead comes back its lines must
 * wait for the resume: only the rest of the chunk being framed may still arrive. Every line
 * arrives once, in order. Chunks of 4 bytes hold two lines of "x\n". */
static void test_file_pause(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/pause.txt", dir);
  if (!put_file(path, "wb", "a\nb\nc\np\nd\ne\nf\ng\nh\n")) return;
  for (size_t chunk = 2; chunk <= 6; chunk += 2) {
    wm_ctx ctx;
    wm_ctx_init(&ctx);
    wm_exec_config cfg = {0};
    wm_exec *e = wm_exec_new(&ctx, &cfg);
    pausesink ps = {.e = e};
    wm_buf_init(&ps.seen);
    CHECK(uv_timer_init(wm_exec_host(e)->loop, &ps.tm) == 0);
    ps.tm.data = &ps;
    wm_lines_config lc = {.path = path, .chunk = chunk};
    wm_op *src = wm_lines_new(wm_exec_host(e), "read", &lc);
    wm_op *sink = wm_op_new(&ctx, &pause_vt, &ps, "sink");
    CHECK(src && sink && wm_op_connect(src, 0, sink) >= 0 && wm_ctx_prepare(&ctx) == WM_OK);
    CHECK(wm_exec_run(e) == WM_OK);
    CHECK_STR(ps.seen.data, "a;b;c;p;d;e;f;g;h;");
    CHECK(ps.resumed == 1);
    /* "p" ends a chunk of 2 and of 4 bytes; one of 6 is "p\nd\ne\n": "d" and "e" follow */
    CHECK(ps.while_paused == (chunk == 6 ? 2 : 0));
    if (!uv_is_closing((uv_handle_t *)&ps.tm)) { /* (the executor's sweep closes it) */
      uv_close((uv_handle_t *)&ps.tm, on_tm_closed);
      uv_run(wm_exec_host(e)->loop, UV_RUN_DEFAULT);
    }
    wm_ctx_free(&ctx);
    wm_exec_free(e);
    wm_buf_free(&ps.seen);
  }
  remove(path);
}

void test_io(void) {
  char dir[] = "/tmp/wm_test_io.XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  test_file_positions(dir);
  test_file_checkpoint(dir);
  test_file_parts(dir);
  test_file_pause(dir);
  rmdir(dir);
  test_socket_reset();
  test_listen_reset();
  test_chunk_range();
  test_csv_plain();
  test_csv_skip();
  test_lookahead();
}
