/* The TCP server source listen_lines(host, port): lines from every client that connects,
 * each framed on its own (origin "host:port (client n)"). Listening starts at creation, so
 * that clients may connect as soon as it is announced.
 *
 * A client's EOF ends that client's input (its last line counts). A client whose
 * connection is reset is reported on stderr and its partial line dropped; the others go on.
 * Client handles are separate allocations, freed in their close callbacks; the server's
 * state lives until the last of them (and the server handle) is closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/wm_lines.h"

typedef struct listensrc listensrc;

typedef struct client {
  listensrc *ls;
  uv_tcp_t tcp;
  wm_framer fr;
  char origin[160];
  int open, reading, ended;
  struct client *next;
} client;

struct listensrc {
  wm_srchead h; /* first */
  char *origin;
  uv_tcp_t server;
  int server_open;
  int port;
  size_t max_line;
  int max_clients, accepted, active; /* active: clients whose input has not ended */
  client *clients;
};

static void listen_destroy(wm_io_owner *own) {
  listensrc *ls = (listensrc *)own;
  free(ls->h.buf);
  free(ls->origin);
  free(ls);
}

static void on_client_closed(uv_handle_t *hd) {
  client *c = hd->data;
  listensrc *ls = c->ls;
  for (client **pp = &ls->clients; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  wm_buf_free(&c->fr.carry);
  free(c);
  ls->h.own.closing--;
  if (ls->h.own.released && ls->h.own.closing == 0) listen_destroy(&ls->h.own);
}

static void client_close(client *c) {
  if (c->open && c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
  c->reading = 0;
  if (!c->open) return;
  c->open = 0;
  c->ls->h.own.closing++; /* the client's memory (and the server's) waits for the callback */
  if (!uv_is_closing((uv_handle_t *)&c->tcp)) uv_close((uv_handle_t *)&c->tcp, on_client_closed);
  else on_client_closed((uv_handle_t *)&c->tcp); /* the host's sweep closed it */
}

static void close_server(listensrc *ls) {
  wm_io_close(&ls->h.own, (uv_handle_t *)&ls->server, &ls->server_open);
}

static void listen_free(wm_op *op) {
  listensrc *ls = op->impl;
  if (!ls) return;
  close_server(ls);
  for (client *c = ls->clients, *next; c; c = next) {
    next = c->next;
    client_close(c);
  }
  wm_io_release(&ls->h.own);
}

static void listen_check_done(listensrc *ls) {
  if (!ls->server_open && ls->active == 0) wm_src_done(&ls->h);
}

/* A client's input ended: at its EOF (flush) the last line counts. WM_OK or WM_ERR. */
static int client_end(client *c, int flush) {
  if (c->ended) return WM_OK;
  c->ended = 1;
  c->ls->active--;
  int rc = flush ? wm_framer_flush(&c->ls->h, &c->fr) : WM_OK;
  client_close(c);
  return rc;
}

static void on_client_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
  (void)b;
  client *c = st->data;
  listensrc *ls = c->ls;
  if (ls->h.finished || n == 0) return;
  int rc;
  if (n < 0) { /* EOF, or a reset: that client's input ends */
    if (n != UV_EOF) {
      fprintf(stderr, "wmrun: %s: %s%s\n", c->origin, uv_strerror((int)n),
              c->fr.carry.len ? " (its partial last line is dropped)" : "");
      fflush(stderr);
    }
    rc = client_end(c, n == UV_EOF);
    if (rc == WM_OK) listen_check_done(ls);
  } else {
    rc = wm_framer_feed(&ls->h, &c->fr, ls->h.buf, (size_t)n);
    wm_io_batch_done(ls->h.host);
  }
  if (rc != WM_OK) wm_src_fail(&ls->h);
}

static void on_client_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *b) {
  (void)suggested;
  /* one read buffer for every client: each read is framed before the next one starts */
  wm_srchead *h = &((client *)hd->data)->ls->h;
  *b = uv_buf_init(h->buf, (unsigned)h->chunk);
}

static int client_read_start(client *c) {
  if (c->reading || !c->open || c->ls->h.paused) return 0;
  int rc = uv_read_start((uv_stream_t *)&c->tcp, on_client_alloc, on_client_read);
  if (rc == 0) c->reading = 1;
  return rc;
}

static void on_connection(uv_stream_t *server, int status) {
  listensrc *ls = server->data;
  if (ls->h.stopped || status < 0) return;
  client *c = calloc(1, sizeof *c);
  if (!c) {
    wm_ctx_error(ls->h.op->ctx, "out of memory accepting a client");
    wm_src_fail(&ls->h);
    return;
  }
  c->ls = ls;
  wm_buf_init(&c->fr.carry);
  if (uv_tcp_init(server->loop, &c->tcp) != 0) {
    free(c);
    return;
  }
  c->open = 1;
  c->tcp.data = c;
  c->next = ls->clients;
  ls->clients = c;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    c->ended = 1;
    client_close(c);
    return;
  }
  ls->accepted++;
  ls->active++;
  snprintf(c->origin, sizeof c->origin, "%s (client %d)", ls->origin, ls->accepted);
  wm_framer_init(&c->fr, c->origin, ls->max_line);
  if (ls->max_clients > 0 && ls->accepted >= ls->max_clients) close_server(ls);
  if (client_read_start(c) != 0) {
    client_end(c, 0);
    listen_check_done(ls);
  }
}

static int listen_start(wm_op *op, wm_io_host *host) {
  (void)op;
  (void)host;
  return WM_OK; /* listening since creation: clients may connect as soon as it is announced */
}

static void listen_stop(wm_op *op, wm_io_host *host, int finish) {
  listensrc *ls = op->impl;
  (void)host;
  if (ls->h.stopped) return;
  ls->h.stopped = 1;
  close_server(ls);
  for (client *c = ls->clients, *next; c; c = next) {
    next = c->next;
    client_end(c, 0); /* a drain: partial lines were never read to their end */
  }
  if (!finish) {
    ls->h.finished = 1;
    return;
  }
  listen_check_done(ls);
}

static void listen_pause(wm_op *op, wm_io_host *host, int paused) {
  listensrc *ls = op->impl;
  (void)host;
  ls->h.paused = paused;
  for (client *c = ls->clients; c; c = c->next) {
    if (paused) {
      if (c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
      c->reading = 0;
    } else if (!c->ended) {
      client_read_start(c);
    }
  }
}

static const wm_op_vt listen_vt = {.kind = "listen_lines", .record = wm_source_record, .free = listen_free};
static const wm_source_vt listen_svt = {.start = listen_start, .stop = listen_stop, .pause = listen_pause};

wm_op *wm_listen_lines_new(wm_io_host *host, const char *name, const wm_tcp_config *cfg) {
  wm_ctx *ctx = host->ctx;
  listensrc *ls = calloc(1, sizeof *ls);
  struct sockaddr_storage addr;
  if (!ls) {
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  if (wm_src_head_init(&ls->h, host, cfg->chunk, (size_t)64 << 10, name ? name : "listen_lines", listen_destroy) != 0) {
    listen_destroy(&ls->h.own);
    return NULL;
  }
  ls->max_clients = cfg->max_clients;
  ls->max_line = cfg->max_line;
  wm_op *op = wm_src_op(host, &listen_vt, &listen_svt, &ls->h, name);
  if (!op) return NULL;
  if (wm_io_resolve(host, cfg->host, cfg->port, &addr) != WM_OK) return NULL;
  int rc = uv_tcp_init(host->loop, &ls->server);
  if (rc == 0) {
    ls->server_open = 1;
    ls->server.data = ls;
    rc = uv_tcp_bind(&ls->server, (const struct sockaddr *)&addr, 0);
  }
  if (rc == 0) rc = uv_listen((uv_stream_t *)&ls->server, 128, on_connection);
  if (rc != 0) {
    wm_ctx_error(ctx, "cannot listen on %s:%d: %s", cfg->host, cfg->port, uv_strerror(rc));
    close_server(ls);
    return NULL;
  }
  struct sockaddr_storage bound;
  int len = sizeof bound;
  ls->port = cfg->port;
  if (uv_tcp_getsockname(&ls->server, (struct sockaddr *)&bound, &len) == 0) {
    if (bound.ss_family == AF_INET) ls->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    else if (bound.ss_family == AF_INET6)
      ls->port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
  }
  if (!(ls->origin = wm_io_host_port(cfg->host, ls->port))) {
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  if (!cfg->quiet) {
    fprintf(stderr, "wmrun: listening on %s\n", ls->origin);
    fflush(stderr);
  }
  return op;
}

int wm_listen_lines_port(const wm_op *op) {
  return op->vt == &listen_vt ? ((const listensrc *)op->impl)->port : -1;
}
