/* The print sink: Flink's print() format (see wm_print.h). */
#include "io/wm_print.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/wm_buf.h"
#include "base/wm_jsonw.h"

typedef struct printer {
  char *prefix; /* "prefix> ", "prefix:2> ", "2> " or "" */
  FILE *out;
  wm_buf line;
  wm_jsonw jw; /* rows are written through their prepared schema */
  int tty;
  int failed; /* a write failed: reported once */
} printer;

static const char *out_name(const printer *p) {
  return p->out == stdout ? "standard output" : "the print output";
}

/* Reports a failed write or flush once (errno says why). */
static int print_failed(wm_op *op, printer *p) {
  int e = errno;
  if (p->failed) return WM_ERR;
  p->failed = 1;
  return wm_ctx_error(op->ctx, "cannot write to %s: %s\n  in sink '%s'", out_name(p),
                      e ? strerror(e) : "write error", op->name);
}

/* Flushes; WM_OK or WM_ERR. */
static int print_flush(wm_op *op, printer *p) {
  if (p->failed) return WM_ERR;
  errno = 0;
  if (fflush(p->out) != 0 || ferror(p->out)) return print_failed(op, p);
  return WM_OK;
}

static int print_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  printer *p = op->impl;
  wm_buf_clear(&p->line);
  wm_buf_adds(&p->line, p->prefix);
  wm_jsonw_value(&p->jw, &p->line, rec, 0, op->ctx->host.format, op->ctx->host.ud);
  wm_buf_addc(&p->line, '\n');
  if (p->line.oom) return wm_ctx_error(op->ctx, "out of memory formatting a record");
  if (p->failed) return WM_ERR;
  errno = 0;
  if (fwrite(p->line.data, 1, p->line.len, p->out) != p->line.len) return print_failed(op, p);
  return p->tty ? print_flush(op, p) : WM_OK;
}

static int print_watermark(wm_op *op, int64_t wm) {
  (void)wm;
  printer *p = op->impl;
  return wm == INT64_MAX ? print_flush(op, p) : WM_OK;
}

static void print_free(wm_op *op) {
  printer *p = op->impl;
  if (!p) return;
  fflush(p->out);
  wm_buf_free(&p->line);
  wm_jsonw_free(&p->jw);
  free(p->prefix);
  free(p);
}

static const wm_op_vt print_vt = {
    .kind = "print",
    .record = print_record,
    .watermark = print_watermark,
    .free = print_free,
};

wm_op *wm_print_new(wm_ctx *ctx, const char *name, const wm_print_config *cfg) {
  printer *p = calloc(1, sizeof *p);
  if (!p) goto oom;
  p->out = cfg->out ? cfg->out : stdout;
  p->tty = isatty(fileno(p->out));
  wm_buf_init(&p->line);
  wm_jsonw_init(&p->jw);
  const char *pre = cfg->prefix && *cfg->prefix ? cfg->prefix : NULL;
  size_t len = (pre ? strlen(pre) : 0) + 32;
  p->prefix = malloc(len);
  if (!p->prefix) goto oom;
  if (pre && cfg->instance > 0) snprintf(p->prefix, len, "%s:%d> ", pre, cfg->instance);
  else if (pre) snprintf(p->prefix, len, "%s> ", pre);
  else if (cfg->instance > 0) snprintf(p->prefix, len, "%d> ", cfg->instance);
  else p->prefix[0] = '\0';
  wm_op *op = wm_op_new(ctx, &print_vt, p, name);
  if (!op) goto oom;
  return op;
oom:
  if (p) free(p->prefix);
  free(p);
  wm_ctx_error(ctx, "out of memory creating a print sink");
  return NULL;
}

/* discard(): every record dropped where it arrives (the graph counts it in records_in) */
static int discard_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)op;
  (void)chan;
  (void)rec;
  (void)ts;
  return WM_OK;
}

static const wm_op_vt discard_vt = {.kind = "discard", .record = discard_record};

wm_op *wm_discard_new(wm_ctx *ctx, const char *name) {
  wm_op *op = wm_op_new(ctx, &discard_vt, NULL, name);
  if (!op) wm_ctx_error(ctx, "out of memory creating a discarding sink");
  return op;
}

int wm_print_flush_all(wm_ctx *ctx) {
  int rc = WM_OK;
  for (size_t i = 0; i < ctx->nops; i++) {
    wm_op *op = ctx->ops[i];
    if (op->vt == &print_vt && !((printer *)op->impl)->failed && print_flush(op, op->impl) != WM_OK)
      rc = WM_ERR;
  }
  return rc;
}
