/* Prometheus metrics over HTTP (see wm_metrics_http.h). */
#include "exec/wm_metrics_http.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __linux__
#include <dirent.h>
#include <sys/resource.h>
#endif


#define REQ_MAX 8192

typedef struct conn {
  uv_tcp_t tcp; /* first: the handle's address is the connection's */
  wm_metrics_http *srv;
  struct conn *prev, *next;
  char req[REQ_MAX];
  size_t len;
  uv_write_t wr;
  wm_buf out;
  uint64_t deadline; /* uv_now: answered and closed (408) or closed by then */
  int closing;
  int answered;      /* the response is written or being written */
  int refused;       /* past the cap or the reserve: 503 (not counted in active) */
} conn;

struct wm_metrics_http {
  uv_tcp_t listener; /* first */
  uv_timer_t sweep;  /* times out connections (on_sweep); runs while there are some */
  wm_ctx *ctx;
  wm_mboard *board; /* NULL: ctx's operators only (wm_metrics_http_set_board) */
  int thread;       /* the board's thread that ctx is */
  struct route {
    const char *path, *type;
    void (*fn)(wm_buf *body, void *ud);
    void *ud;
  } routes[WM_METRICS_MAX_ROUTES]; /* besides /metrics (wm_metrics_http_route) */
  int nroutes;
  conn *conns;
  int active;   /* connections open and not refused (at most WM_METRICS_MAX_CONNS) */
  int handles;  /* open handles (listener and connections) whose close callback is pending */
  int stopping;
  int listener_open;
  int sweep_open;
};

/* ---- requests ------------------------------------------------------------------------------ */

static int is_tchar(unsigned char c) { /* RFC 9110 token characters */
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Whether [r, r + n) is a request line: METHOD SP TARGET SP HTTP/d.d (no CR or LF). */
static int request_line_ok(const char *r, size_t n, size_t *mlen, const char **target,
                           size_t *tlen) {
  size_t i = 0;
  while (i < n && is_tchar((unsigned char)r[i])) i++;
  if (i == 0 || i >= n || r[i] != ' ') return 0;
  *mlen = i++;
  size_t t0 = i;
  while (i < n && (unsigned char)r[i] > 0x20 && (unsigned char)r[i] < 0x7f) i++;
  if (i == t0 || i >= n || r[i] != ' ') return 0;
  *target = r + t0;
  *tlen = i - t0;
  i++;
  return n - i == 8 && memcmp(r + i, "HTTP/", 5) == 0 && r[i + 5] >= '0' && r[i + 5] <= '9' &&
         r[i + 6] == '.' && r[i + 7] >= '0' && r[i + 7] <= '9';
}

wm_metrics_req wm_metrics_parse_target(const char *r, size_t n, size_t max, const char **path,
                                       size_t *plen) {
  /* control characters (a NUL byte, ...) are never part of a request, whatever comes next */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)r[i];
    if ((c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f) return WM_MREQ_BAD;
  }
  const char *nl = memchr(r, '\n', n);
  if (!nl) return n >= max ? WM_MREQ_TOO_LARGE : WM_MREQ_MORE;
  size_t ll = (size_t)(nl - r);
  if (ll > 0 && r[ll - 1] == '\r') ll--;
  size_t mlen, tlen;
  const char *target;
  if (!request_line_ok(r, ll, &mlen, &target, &tlen)) return WM_MREQ_BAD;
  /* the end of the headers: an empty line */
  int done = 0;
  for (size_t i = (size_t)(nl - r); i < n && !done; i++)
    done = r[i] == '\n' && ((i + 1 < n && r[i + 1] == '\n') ||
                            (i + 2 < n && r[i + 1] == '\r' && r[i + 2] == '\n'));
  if (!done) return n >= max ? WM_MREQ_TOO_LARGE : WM_MREQ_MORE;
  int get = mlen == 3 && memcmp(r, "GET", 3) == 0;
  int head = mlen == 4 && memcmp(r, "HEAD", 4) == 0;
  if (!get && !head) return WM_MREQ_METHOD;
  *plen = strcspn(target, "? ");
  if (*plen > tlen) *plen = tlen;
  *path = target;
  return get ? WM_MREQ_GET : WM_MREQ_HEAD;
}

wm_metrics_req wm_metrics_parse_request(const char *r, size_t n, size_t max) {
  const char *path;
  size_t plen;
  wm_metrics_req q = wm_metrics_parse_target(r, n, max, &path, &plen);
  if ((q == WM_MREQ_GET || q == WM_MREQ_HEAD) && (plen != 8 || memcmp(path, "/metrics", 8) != 0))
    return WM_MREQ_NOT_FOUND;
  return q;
}

/* ---- descriptors ------------------------------------------------------------------------- */

/* Whether one more descriptor for a connection leaves the job its reserve: at least
 * WM_METRICS_FD_RESERVE, and a quarter of the soft limit, free. Counted in /proc/self/fd
 * (Linux); elsewhere only the connection cap applies. */
static int fd_room(void) {
#ifdef __linux__
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 1;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0; /* no descriptor left even for this: none for a connection */
  uint64_t open = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.') open++;
  closedir(d);
  if (open > 0) open--; /* the directory's own */
  uint64_t limit = (uint64_t)rl.rlim_cur, reserve = limit / 4;
  if (reserve < WM_METRICS_FD_RESERVE) reserve = WM_METRICS_FD_RESERVE;
  return open + 1 + reserve <= limit;
#else
  return 1;
#endif
}

/* ---- the server --------------------------------------------------------------------------- */

static void maybe_free(wm_metrics_http *m) {
  if (m->stopping && m->handles == 0) free(m);
}

static void on_conn_closed(uv_handle_t *h) {
  conn *c = (conn *)h;
  wm_metrics_http *m = c->srv;
  if (c->prev) c->prev->next = c->next;
  else m->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  wm_buf_free(&c->out);
  free(c);
  m->handles--;
  maybe_free(m);
}

static void conn_close(conn *c) {
  if (c->closing) return;
  c->closing = 1;
  if (!c->refused) c->srv->active--;
  uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_written(uv_write_t *w, int status) {
  (void)status;
  conn_close(w->data);
}

static void respond(conn *c, const char *status, const char *type, const wm_buf *body,
                    int head_only) {
  wm_buf *o = &c->out;
  size_t n = body ? body->len : 0;
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->answered = 1;
  wm_buf_adds(o, "HTTP/1.1 ");
  wm_buf_adds(o, status);
  wm_buf_adds(o, "\r\nContent-Type: ");
  wm_buf_adds(o, type);
  wm_buf_adds(o, "\r\nContent-Length: ");
  wm_buf_add_int(o, (int64_t)n);
  wm_buf_adds(o, "\r\nConnection: close\r\n\r\n");
  if (n && !head_only) wm_buf_add(o, body->data, n);
  if (o->oom) {
    conn_close(c);
    return;
  }
  uv_buf_t buf = uv_buf_init(o->data, (unsigned)o->len);
  c->wr.data = c;
  if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0) conn_close(c);
}

static void respond_text(conn *c, const char *status, const char *text) {
  wm_buf body;
  wm_buf_init(&body);
  wm_buf_adds(&body, text);
  respond(c, status, "text/plain; charset=utf-8", &body, 0);
  wm_buf_free(&body);
}

/* The route for a path of another page than /metrics; NULL: none. */
static const struct route *find_route(const wm_metrics_http *m, const char *path, size_t plen) {
  for (int i = 0; i < m->nroutes; i++)
    if (strlen(m->routes[i].path) == plen && memcmp(m->routes[i].path, path, plen) == 0)
      return &m->routes[i];
  return NULL;
}

static void answer(conn *c, wm_metrics_req q, const char *path, size_t plen) {
  const struct route *rt = NULL;
  if ((q == WM_MREQ_GET || q == WM_MREQ_HEAD) && !(plen == 8 && memcmp(path, "/metrics", 8) == 0)) {
    rt = find_route(c->srv, path, plen);
    if (!rt) q = WM_MREQ_NOT_FOUND;
  }
  switch (q) {
  case WM_MREQ_GET:
  case WM_MREQ_HEAD: {
    wm_buf body;
    if (rt) {
      wm_buf_init(&body);
      rt->fn(&body, rt->ud);
      respond(c, "200 OK", rt->type, &body, q == WM_MREQ_HEAD);
      wm_buf_free(&body);
      break;
    }
    wm_buf_init(&body);
    wm_metrics_http *m = c->srv;
    if (m->board) {
      /* this thread's figures as they are now; the others' as they last published them */
      wm_mboard_publish(m->board, m->thread, m->ctx);
      wm_mboard_format(&body, m->board, wm_ctx_now(m->ctx));
    } else {
      wm_metrics_format(&body, m->ctx, wm_ctx_now(m->ctx));
    }
    respond(c, "200 OK", "text/plain; version=0.0.4; charset=utf-8", &body, q == WM_MREQ_HEAD);
    wm_buf_free(&body);
    break;
  }
  case WM_MREQ_NOT_FOUND:
    respond_text(c, "404 Not Found", c->srv->nroutes ? "not found: the live view is at /\n"
                                                     : "not found: the metrics are at /metrics\n");
    break;
  case WM_MREQ_METHOD:
    respond_text(c, "405 Method Not Allowed", "only GET /metrics is served here\n");
    break;
  case WM_MREQ_TOO_LARGE:
    respond_text(c, "431 Request Header Fields Too Large", "the request is too large\n");
    break;
  case WM_MREQ_BAD:
    respond_text(c, "400 Bad Request", "not an HTTP request: GET /metrics HTTP/1.1\n");
    break;
  case WM_MREQ_MORE:
    break;
  }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  conn *c = (conn *)h;
  *buf = uv_buf_init(c->req + c->len, (unsigned)(sizeof c->req - 1 - c->len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  conn *c = (conn *)s;
  if (nread < 0) {
    conn_close(c);
    return;
  }
  c->len += (size_t)nread;
  c->req[c->len] = '\0';
  const char *path = NULL;
  size_t plen = 0;
  wm_metrics_req q = wm_metrics_parse_target(c->req, c->len, sizeof c->req - 1, &path, &plen);
  if (q != WM_MREQ_MORE) answer(c, q, path, plen);
}

/* Every WM_METRICS_SWEEP_MS: a connection older than WM_METRICS_TIMEOUT_MS (a request not
 * sent in full, an answer not read) is answered 408 if it was still sending, and closed. */
static void on_sweep(uv_timer_t *t) {
  wm_metrics_http *m = t->data;
  uint64_t now = uv_now(t->loop);
  conn *next;
  for (conn *c = m->conns; c; c = next) {
    next = c->next;
    if (c->closing || now < c->deadline) continue;
    if (c->answered) {
      conn_close(c);
    } else {
      c->deadline = now + WM_METRICS_TIMEOUT_MS; /* the 408 gets as long to go out */
      respond_text(c, "408 Request Timeout", "the request was not sent in time\n");
    }
  }
  if (!m->conns) uv_timer_stop(t);
}

static void on_connection(uv_stream_t *server, int status) {
  wm_metrics_http *m = (wm_metrics_http *)server;
  if (status < 0 || m->stopping) return;
  conn *c = calloc(1, sizeof *c);
  if (!c) return; /* the client waits and times out; the job goes on */
  c->srv = m;
  wm_buf_init(&c->out);
  if (uv_tcp_init(server->loop, &c->tcp) != 0) {
    free(c);
    return;
  }
  m->handles++;
  c->next = m->conns;
  if (m->conns) m->conns->prev = c;
  m->conns = c;
  c->deadline = uv_now(server->loop) + WM_METRICS_TIMEOUT_MS;
  uv_unref((uv_handle_t *)&c->tcp); /* a scrape never keeps a finished job alive */
  /* libuv has taken the descriptor already: accept it, and past the cap or the job's
   * reserve, answer 503 at once (a few hundred bytes: written at once) and close it */
  c->refused = m->active >= WM_METRICS_MAX_CONNS || !fd_room();
  if (!c->refused) m->active++;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    conn_close(c);
    return;
  }
  if (!uv_is_active((uv_handle_t *)&m->sweep) &&
      uv_timer_start(&m->sweep, on_sweep, WM_METRICS_SWEEP_MS, WM_METRICS_SWEEP_MS) != 0) {
    conn_close(c); /* without the sweep nothing would time it out */
    return;
  }
  if (c->refused) {
    respond_text(c, "503 Service Unavailable",
                 "too many connections to the metrics endpoint; try again\n");
    return;
  }
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) conn_close(c);
}

static void on_listener_closed(uv_handle_t *h) {
  wm_metrics_http *m = (wm_metrics_http *)h;
  m->handles--;
  maybe_free(m);
}

static void on_sweep_closed(uv_handle_t *h) {
  wm_metrics_http *m = h->data;
  m->handles--;
  maybe_free(m);
}

wm_metrics_http *wm_metrics_http_start(uv_loop_t *loop, wm_ctx *ctx, const char *host, int port,
                                       int *bound) {
  if (!host || !*host) host = "127.0.0.1";
  if (port < 0 || port > 65535) {
    wm_ctx_error(ctx, "metrics port %d is not between 0 and 65535", port);
    return NULL;
  }
  struct sockaddr_storage addr;
  int rc = strchr(host, ':') ? uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr)
                             : uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
  if (rc != 0) {
    wm_ctx_error(ctx, "metrics host '%s' is not an IP address: %s", host, uv_strerror(rc));
    return NULL;
  }
  wm_metrics_http *m = calloc(1, sizeof *m);
  if (!m) {
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  m->ctx = ctx;
  if ((rc = uv_tcp_init(loop, &m->listener)) != 0) {
    free(m);
    wm_ctx_error(ctx, "cannot serve metrics on %s:%d: %s", host, port, uv_strerror(rc));
    return NULL;
  }
  m->handles = 1;
  m->listener_open = 1;
  uv_unref((uv_handle_t *)&m->listener);
  if ((rc = uv_timer_init(loop, &m->sweep)) != 0) {
    wm_ctx_error(ctx, "cannot serve metrics on %s:%d: %s", host, port, uv_strerror(rc));
    wm_metrics_http_stop(m);
    return NULL;
  }
  m->sweep.data = m;
  m->sweep_open = 1;
  m->handles++;
  uv_unref((uv_handle_t *)&m->sweep);
  if ((rc = uv_tcp_bind(&m->listener, (const struct sockaddr *)&addr, 0)) != 0 ||
      (rc = uv_listen((uv_stream_t *)&m->listener, 16, on_connection)) != 0) {
    wm_ctx_error(ctx, "cannot serve metrics on %s:%d: %s", host, port, uv_strerror(rc));
    wm_metrics_http_stop(m);
    return NULL;
  }
  if (bound) {
    struct sockaddr_storage got;
    int len = sizeof got;
    *bound = port;
    if (uv_tcp_getsockname(&m->listener, (struct sockaddr *)&got, &len) == 0)
      *bound = got.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&got)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&got)->sin_port);
  }
  return m;
}

void wm_metrics_http_set_board(wm_metrics_http *m, wm_mboard *board, int thread) {
  m->board = board;
  m->thread = thread;
}

int wm_metrics_http_route(wm_metrics_http *m, const char *path, const char *type,
                          void (*fn)(wm_buf *body, void *ud), void *ud) {
  if (m->nroutes == WM_METRICS_MAX_ROUTES) return WM_ERR;
  m->routes[m->nroutes++] = (struct route){.path = path, .type = type, .fn = fn, .ud = ud};
  return WM_OK;
}

void wm_metrics_http_stop(wm_metrics_http *m) {
  if (!m || m->stopping) return;
  m->stopping = 1;
  for (conn *c = m->conns; c; c = c->next) conn_close(c);
  if (m->listener_open) {
    m->listener_open = 0;
    uv_close((uv_handle_t *)&m->listener, on_listener_closed);
  }
  if (m->sweep_open) {
    m->sweep_open = 0;
    uv_close((uv_handle_t *)&m->sweep, on_sweep_closed);
  }
}
