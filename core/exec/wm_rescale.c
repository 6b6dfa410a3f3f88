/* Restoring at another parallelism or thread count (exec/wm_rescale.h). */
#include "exec/wm_rescale.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_keygroup.h"
#include "exec/wm_exchange.h"
#include "exec/wm_mt.h"
#include "io/wm_conn.h"
#include "time/wm_time.h"

/* One "part NAME NODE ROLE SUBTASK NSUB" line of the MANIFEST. */
typedef struct pline {
  char *name;
  uint32_t node;
  int role, sub, nsub;
  int src; /* a source's position (src-...) */
  const wm_part *part;
} pline;

struct wm_rescale {
  pline *l;
  size_t n;
  const wm_part *parts;
  size_t np;
};

void wm_rescale_meta_line(wm_buf *m, const char *prefix, const wm_op *op, size_t place,
                          int thread) {
  char name[300];
  if (wm_op_part_name(op, place, thread, name, sizeof name) != 0) return;
  wm_buf_adds(m, "part ");
  wm_buf_adds(m, prefix);
  wm_buf_adds(m, name);
  wm_buf_addc(m, ' ');
  wm_buf_add_int(m, op->node);
  wm_buf_addc(m, ' ');
  wm_buf_add_int(m, op->role);
  wm_buf_addc(m, ' ');
  wm_buf_add_int(m, op->subtask);
  wm_buf_addc(m, ' ');
  wm_buf_add_int(m, op->nsub);
  wm_buf_addc(m, '\n');
}

void wm_rescale_free(wm_rescale *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) free(r->l[i].name);
  free(r->l);
  free(r);
}

static const wm_part *find_part(const wm_part *parts, size_t np, const char *name) {
  for (size_t k = 0; k < np; k++)
    if (!strcmp(parts[k].name, name)) return &parts[k];
  return NULL;
}

wm_rescale *wm_rescale_new(const char *meta, size_t mlen, const wm_part *parts, size_t np,
                           wm_error *err) {
  wm_rescale *r = calloc(1, sizeof *r);
  if (!r) {
    wm_error_set(err, "out of memory");
    return NULL;
  }
  r->parts = parts;
  r->np = np;
  size_t cap = 0;
  const char *p = meta, *end = meta + mlen;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    size_t ll = (size_t)(le - p);
    if (ll > 5 && !memcmp(p, "part ", 5)) {
      char line[600], name[400];
      unsigned long node;
      int role, sub, nsub, used = 0;
      snprintf(line, sizeof line, "%.*s", (int)(ll < sizeof line - 1 ? ll : sizeof line - 1), p);
      if (sscanf(line, "part %399s %lu %d %d %d%n", name, &node, &role, &sub, &nsub, &used) != 5 ||
          line[used] != '\0' || node == 0 || node > UINT32_MAX || role < 0 || role > 2 ||
          nsub < 1 || sub < 0 || sub >= nsub) {
        wm_error_set(err, "its MANIFEST has a damaged part line ('%.80s')", line);
        wm_rescale_free(r);
        return NULL;
      }
      const wm_part *pt = find_part(parts, np, name);
      if (!pt) {
        wm_error_set(err, "its MANIFEST places part %s, which it does not hold", name);
        wm_rescale_free(r);
        return NULL;
      }
      if (r->n == cap) {
        size_t nc = cap ? cap * 2 : 32;
        pline *g = realloc(r->l, nc * sizeof *g);
        if (!g) {
          wm_error_set(err, "out of memory");
          wm_rescale_free(r);
          return NULL;
        }
        r->l = g;
        cap = nc;
      }
      pline *l = &r->l[r->n];
      if (!(l->name = strdup(name))) {
        wm_error_set(err, "out of memory");
        wm_rescale_free(r);
        return NULL;
      }
      l->node = (uint32_t)node;
      l->role = role;
      l->sub = sub;
      l->nsub = nsub;
      l->src = !strncmp(name, "src-", 4);
      l->part = pt;
      r->n++;
    }
    p = le + 1;
  }
  return r;
}

int wm_rescale_same(const wm_rescale *r, const wm_ctx *ctx, int thread, int threads_then,
                    int threads_now) {
  if (threads_then != threads_now) return 0;
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *op = ctx->ops[i];
    if (!op->node) continue;
    char name[300];
    if (wm_op_part_name(op, i, thread, name, sizeof name) != 0) return 0;
    size_t k = 0;
    while (k < r->n && strcmp(r->l[k].name, name) != 0) k++;
    /* (the node may differ: a job upgraded with uids has its operators elsewhere in the
     * plan, which the part's name, after the uid, does not depend on) */
    if (k == r->n || r->l[k].role != op->role || r->l[k].sub != op->subtask ||
        r->l[k].nsub != op->nsub)
      return 0;
  }
  return 1;
}

/* Whether the part line l is of the operator with uid base `base` (its instances' uids are
 * base.1 ... base.n at n > 1): "uid-<base>.<thread>" or "uid-<base>.<k>.<thread>". */
static int uid_line(const pline *l, const char *base) {
  const char *nm = l->name + (l->src ? 4 : 0);
  size_t bl = strlen(base);
  if (strncmp(nm, "uid-", 4) != 0 || strncmp(nm + 4, base, bl) != 0 || nm[4 + bl] != '.') return 0;
  const char *p = nm + 5 + bl;
  for (int parts = l->nsub > 1 ? 2 : 1; parts > 0; parts--) {
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    if (parts > 1 && *p++ != '.') return 0;
  }
  return *p == '\0';
}

/* The lines of op (sources' or operators'), in *out (malloc'ed), *n: an operator with a uid
 * by its uid (its node may have moved), any other by its node; and its role. */
static int lines_of(const wm_rescale *r, const wm_op *op, int src, const pline ***out, size_t *n) {
  *n = 0;
  *out = malloc((r->n ? r->n : 1) * sizeof **out);
  if (!*out) return -1;
  char base[200] = "";
  if (op->uid && op->role == WM_ROLE_MAIN) {
    snprintf(base, sizeof base, "%s", op->uid);
    char *dot = strrchr(base, '.');
    if (op->nsub > 1 && dot) *dot = '\0'; /* id.k: the instance's */
  }
  for (size_t k = 0; k < r->n; k++) {
    const pline *l = &r->l[k];
    if (l->src != src || l->role != op->role) continue;
    if (base[0] ? uid_line(l, base) : l->node == op->node) (*out)[(*n)++] = l;
  }
  return 0;
}

/* The old instance whose part gave op (restored by restore_op) its state that is not keyed
 * (a broadcast state): the one of its own number at the same parallelism, else, for an
 * operator with keyed state, the first part whose key groups meet its own (the first of
 * `use` there); -1 otherwise (none, or out of memory). */
static int state_from(const wm_rescale *r, const wm_op *op, uint32_t groups) {
  const pline **c;
  size_t n;
  if (lines_of(r, op, 0, &c, &n) != 0) return -1;
  int from = -1;
  for (size_t k = 0; k < n && from < 0; k++)
    if (c[k]->sub == op->subtask && c[k]->nsub == op->nsub) from = op->subtask;
  if (from < 0 && op->vt->keyed_state && !op->part_path && op->role == WM_ROLE_MAIN) {
    uint32_t a, b;
    wm_keygroup_range(op->subtask, op->nsub, groups, &a, &b);
    for (size_t k = 0; k < n && from < 0; k++) {
      uint32_t x, y;
      wm_keygroup_range(c[k]->sub, c[k]->nsub, groups, &x, &y);
      if (x <= b && y >= a) from = c[k]->sub;
    }
  }
  free(c);
  return from;
}

static int restore_op(wm_rescale *r, wm_ctx *ctx, wm_op *op, const wm_codec_host *codec,
                      uint32_t groups) {
  const pline **c;
  size_t n;
  if (lines_of(r, op, 0, &c, &n) != 0) return wm_ctx_error(ctx, "out of memory");
  int rc = WM_OK;
  const wm_part **use = calloc(n ? n : 1, sizeof *use);
  if (!use) rc = wm_ctx_error(ctx, "out of memory");
  else if (n == 0)
    rc = wm_ctx_error(ctx, "the checkpoint holds no state for operator '%s': the job changed "
                           "since the checkpoint (give operators a stable id with uid, "
                           "docs/checkpoints.md)", op->name);
  int p0 = n ? c[0]->nsub : 0;
  for (size_t k = 0; k < n && rc == WM_OK; k++)
    if (c[k]->nsub != p0)
      rc = wm_ctx_error(ctx, "damaged checkpoint: the parts of '%s' say %d and %d instances",
                        op->name, p0, c[k]->nsub);
  const wm_part *same = NULL;
  for (size_t k = 0; k < n && rc == WM_OK; k++)
    if (c[k]->sub == op->subtask && p0 == op->nsub) same = c[k]->part;
  if (rc != WM_OK) {
    /* said */
  } else if (same) { /* the same instance: all of its state (its input channels may differ) */
    rc = wm_op_restore_parts(op, codec, &same, 1, same, 0, 0, 0);
  } else if (op->role == WM_ROLE_PREAGG) {
    /* (its partials are of any key: not split by key group; and two instances' partials
     * of one key and window would meet in one; a pre-aggregation runs at the parallelism
     * of its file read in parts, which is refused before) */
    rc = wm_ctx_error(ctx, "the pre-aggregation of '%s' ran as %d instances at the checkpoint "
                           "and %d now: its partial aggregates are not redistributed (give its "
                           "input the checkpoint's parallelism with set_parallelism(%d), or "
                           "turn it off with wm.env{pre_aggregate = false})",
                      op->name, p0, op->nsub, p0);
  } else if (op->part_path) {
    /* on one partition's path: the state of the old instance that read the partition, in
     * every new instance (those that do not read it now mark it idle as they start) */
    int owner = (op->part_path - 1) % p0, mine = (op->part_path - 1) % op->nsub == op->subtask;
    const wm_part *one = NULL;
    for (size_t k = 0; k < n; k++)
      if (c[k]->sub == owner) one = c[k]->part;
    rc = one ? wm_op_restore_parts(op, codec, &one, 1, mine ? one : NULL, 0, 0, 0)
             : wm_ctx_error(ctx, "damaged checkpoint: it holds no part of instance %d of '%s'",
                            owner + 1, op->name);
  } else if (op->vt->keyed_state) {
    uint32_t a, b;
    size_t m = 0;
    wm_keygroup_range(op->subtask, op->nsub, groups, &a, &b);
    for (size_t k = 0; k < n; k++) {
      uint32_t x, y;
      wm_keygroup_range(c[k]->sub, p0, groups, &x, &y);
      if (x <= b && y >= a) use[m++] = c[k]->part;
    }
    rc = wm_op_restore_parts(op, codec, use, m, NULL, groups, a, b);
  } else if (op->vt->merge_parts) { /* one state from every old instance's (a timestamp
                                     * assigner: the lowest watermark of them all) */
    for (size_t k = 0; k < n; k++) use[k] = c[k]->part;
    rc = wm_op_restore_parts(op, codec, use, n, NULL, 0, 0, 0);
  } else if (!op->vt->snapshot) { /* no state of its own: the watermarks of one instance */
    const wm_part *one = c[0]->part;
    for (size_t k = 0; k < n; k++)
      if (c[k]->sub == op->subtask) one = c[k]->part;
    rc = wm_op_restore_parts(op, codec, &one, 1, NULL, 0, 0, 0);
    /* what that old instance forwarded is not what this one did: its inputs (e.g. the
     * partitions a union of partitions reads) changed with the parallelism, and one that had
     * ended (its partitions read to their end) would send nothing more, leaving the channels
     * downstream, which start at their lowest, there for good. It forwards anew what its
     * inputs give (downstream, watermarks only go up). */
    op->comb.out = WM_TIME_MIN;
    op->comb.out_idle = false;
    op->wm = WM_TIME_MIN;
    op->ended = false;
  } else {
    rc = wm_ctx_error(ctx, "'%s' ran as %d instance%s at the checkpoint and %d now, and its "
                           "state is not split or merged (only keyed state is, by key group: "
                           "windows, keyed process functions, joins): give it the checkpoint's "
                           "parallelism with set_parallelism(%d)",
                      op->name, p0, p0 == 1 ? "" : "s", op->nsub, p0);
  }
  free(use);
  free(c);
  return rc;
}

/* The parallelism of op at the checkpoint (0: not known). */
static int nsub_then(const wm_rescale *r, const wm_op *op) {
  for (size_t k = 0; k < r->n; k++)
    if (!r->l[k].src && r->l[k].node == op->node && r->l[k].role == op->role) return r->l[k].nsub;
  return 0;
}

int wm_rescale_restore(wm_rescale *r, wm_ctx *ctx, const wm_codec_host *codec, uint32_t groups) {
  /* the sources first: one that cannot go on at this parallelism is the reason to name
   * (its operators downstream, e.g. a timestamp assigner per instance, would be refused too) */
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *op = ctx->ops[i];
    const pline **c;
    size_t n;
    if (!op->node || op->role != WM_ROLE_MAIN) continue;
    if (lines_of(r, op, 1, &c, &n) != 0) return wm_ctx_error(ctx, "out of memory");
    free(c);
    if (n == 0) continue; /* not a source */
    const wm_part **sp;
    size_t nsp;
    if (wm_rescale_source(r, ctx, op, &sp, &nsp) != WM_OK) return WM_ERR;
    free(sp);
  }
  for (size_t i = 0; i < ctx->nops; i++) {
    wm_op *op = ctx->ops[i];
    if (!op->node) continue; /* the executor's own: starts anew */
    if (restore_op(r, ctx, op, codec, groups) != WM_OK) return WM_ERR;
  }
  /* the channels that a partition's assigner feeds (the union of the partitions) at the
   * watermark and status that assigner restored with, rather than the old instance's of
   * their number (which read other partitions) */
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *f = ctx->ops[i];
    if (!f->part_path || !f->vt->wmsource || nsub_then(r, f) == f->nsub) continue;
    int64_t w = f->vt->wmsource->last_watermark(f);
    bool idle = f->vt->wmsource->idle(f);
    for (int pt = 0; pt < f->nports; pt++)
      for (int e = 0; e < f->ports[pt].n; e++) {
        const wm_edge *ed = &f->ports[pt].edges[e];
        if (ed->chan < 0 || ed->chan >= ed->to->comb.n) continue;
        ed->to->comb.ch[ed->chan] = (wm_channel){.wm = w, .idle = idle, .aligned = true};
      }
  }
  return WM_OK;
}

int wm_rescale_source(wm_rescale *r, wm_ctx *ctx, const wm_op *src, const wm_part ***out,
                      size_t *nout) {
  const pline **c;
  size_t n;
  *out = NULL;
  *nout = 0;
  if (lines_of(r, src, 1, &c, &n) != 0) return wm_ctx_error(ctx, "out of memory");
  const wm_part **got = malloc((n ? n : 1) * sizeof *got);
  if (!got) {
    free(c);
    return wm_ctx_error(ctx, "out of memory");
  }
  size_t m = 0;
  for (size_t k = 0; k < n; k++)
    if (c[k]->nsub == src->nsub && c[k]->sub == src->subtask) got[m++] = c[k]->part;
  /* a partitioned source at another parallelism: every old instance's positions, of which
   * each instance restores those of the partitions it reads now */
  if (m == 0 && n > 0 && wm_partsrc_rescalable(src))
    for (size_t k = 0; k < n; k++) got[m++] = c[k]->part;
  int rc = WM_OK;
  if (m == 0 && n == 0)
    rc = wm_ctx_error(ctx, "it holds no position of source '%s' (the job changed since the "
                           "checkpoint)", src->name);
  else if (m == 0)
    rc = wm_ctx_error(ctx, "source '%s' ran as %d instance%s at the checkpoint and %d now: its "
                           "positions are not redistributed (only read_kafka's and read_nats's "
                           "are, by partition; give it the checkpoint's parallelism with "
                           "set_parallelism(%d))",
                      src->name, c[0]->nsub, c[0]->nsub == 1 ? "" : "s", src->nsub, c[0]->nsub);
  free(c);
  if (rc != WM_OK) {
    free(got);
    return rc;
  }
  *out = got;
  *nout = m;
  return WM_OK;
}

int wm_rescale_has_channels(const wm_rescale *r) {
  for (size_t k = 0; k < r->np; k++)
    if (!strncmp(r->parts[k].name, "chan-", 5)) return 1;
  return 0;
}

/* ---- the records in flight ------------------------------------------------------------ */

typedef struct replay {
  wm_rescale *r;
  wm_ctx *ctx;
  uint32_t *gid0; /* the first global instance id of each node (by node), at the checkpoint */
  int *nsub;
  uint32_t nodes;
} replay;

/* The node and old instance of a global instance id (the builder's numbering: the nodes'
 * instances in node order). */
static int gid_node(const replay *rp, uint32_t gid, uint32_t *node, int *sub) {
  for (uint32_t n = 1; n <= rp->nodes; n++)
    if (rp->nsub[n] && gid >= rp->gid0[n] && gid < rp->gid0[n] + (uint32_t)rp->nsub[n]) {
      *node = n;
      *sub = (int)(gid - rp->gid0[n]);
      return 0;
    }
  return -1;
}

/* 1 when an operator that feeds node (directly, or through an exchange) runs as another
 * number of instances than at the checkpoint: node's input channel i is then fed by another
 * instance i (e.g. a union of other partitions) than the one that sent on it. Likewise when
 * the feeder kept its number and node did not, and one of the two settings forwards (one
 * channel, from the feeder of the instance's number) where the other deals (a channel per
 * feeder): a forward at -p 2 (old instance 1's channel 0 fed by feeder 1) is a rebalance at
 * -p 3 (channel 0 fed by feeder 0). A rebalance of as many feeders as node had instances may
 * have been a forward then: counted as changed (dropping a watermark is safe). */
static int feeders_rescaled(const replay *rp, const wm_ctx *ctx, uint32_t node) {
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *g = ctx->ops[i];
    if (!g->node || g->node > rp->nodes || g->role != WM_ROLE_MAIN) continue;
    const wm_op *tgt = NULL;
    int direct = 0, rr = 0;
    for (int p = 0; p < g->nports && !tgt; p++)
      for (int e = 0; e < g->ports[p].n && !tgt; e++) {
        const wm_op *to = g->ports[p].edges[e].to;
        if (to->node == node && to->role == WM_ROLE_MAIN) {
          tgt = to;
          direct = 1;
        } else if (!to->node && !strcmp(to->vt->kind, "exchange")) {
          for (int q = 0; q < to->nports && !tgt; q++)
            for (int x = 0; x < to->ports[q].n && !tgt; x++)
              if (to->ports[q].edges[x].to->node == node) tgt = to->ports[q].edges[x].to;
          rr = tgt && wm_exchange_mode(to) == WM_XCH_ROUND_ROBIN;
        }
      }
    if (!tgt) continue;
    int pf = rp->nsub[g->node], pn = rp->nsub[node];
    if (pf != g->nsub) return 1;
    if (pn != tgt->nsub && ((direct && tgt->nsub > 1) || (rr && pf == pn && pn > 1))) return 1;
  }
  return 0;
}

/* The operator whose edge leads to channel chan of op (an exchange, or a feeder itself);
 * NULL: none here (on another thread). */
static const wm_op *chan_feeder(const wm_ctx *ctx, const wm_op *op, int chan) {
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *g = ctx->ops[i];
    for (int p = 0; p < g->nports; p++)
      for (int e = 0; e < g->ports[p].n; e++)
        if (g->ports[p].edges[e].to == op && g->ports[p].edges[e].chan == chan) return g;
  }
  return NULL;
}

static int on_msg(void *ud, int kind, uint32_t gid, int chan, int64_t t, const wm_value *rec) {
  replay *rp = ud;
  wm_ctx *ctx = rp->ctx;
  uint32_t node;
  int sub;
  if (gid_node(rp, gid, &node, &sub) != 0)
    return wm_ctx_error(ctx, "damaged checkpoint: a record in flight to instance %u, which the "
                             "plan does not have", gid);
  if (kind != WM_MT_RECORD) { /* to every instance's channel (watermarks only go up) */
    /* unless the instances that feed the channels are others now: a watermark that old
     * instance `chan` sent (say of partitions 0 and 2) is not one of the new instance
     * `chan` (say of partitions 0 and 3, one of which is behind it): raising the channel to
     * it would make that partition's records late. The channels were restored at the
     * lowest watermark of them all (wm_op_restore_parts) and the new instances forward
     * what their own restored inputs give (restore_op, wm_rescale_restore). */
    if (feeders_rescaled(rp, ctx, node)) return WM_OK;
    for (size_t i = 0; i < ctx->nops; i++) {
      wm_op *op = ctx->ops[i];
      if (op->node != node || op->role != WM_ROLE_MAIN || chan >= op->nin) continue;
      /* a channel forwarded from one feeder (the instance of op's number): the watermark
       * of old instance `sub`'s feeder is not another instance's */
      const wm_op *f = op->nsub > 1 ? chan_feeder(ctx, op, chan) : NULL;
      if (f && strcmp(f->vt->kind, "exchange") != 0 && op->subtask != sub) continue;
      int rc = kind == WM_MT_WATERMARK ? wm_op_input_watermark(op, chan, t)
                                       : wm_op_input_status(op, chan, kind == WM_MT_IDLE);
      if (rc != WM_OK) return rc;
    }
    return WM_OK;
  }
  /* a record: to what feeds the channel now (an exchange routes it by its key); else to
   * any edge into the node. A two-input operator's record goes to its input: the channels
   * are numbered input 1's first, and where input 2's began at the checkpoint depends on
   * the parallelisms then (old channel 2 at -p 2, input 2's first, is input 1's last at -p 3:
   * taken for channel 2 now, a join's right row was joined as a left one) */
  int side = -1, pos = chan;
  for (size_t i = 0; i < ctx->nops && side < 0; i++) {
    const wm_op *op = ctx->ops[i];
    if (op->node != node || op->role != WM_ROLE_MAIN || op->in2 == INT_MAX) continue;
    int first2 = op->in2; /* not known: as now (right when its feeders kept their parallelism) */
    if (op->in1_node && op->in1_node <= rp->nodes && rp->nsub[op->in1_node] > 0) {
      int pf = rp->nsub[op->in1_node], pn = rp->nsub[node];
      first2 = op->in1_fwd && pn > 1 && pf == pn ? 1 : pf;
    } else if (feeders_rescaled(rp, ctx, node)) {
      return wm_ctx_error(ctx, "a record in flight at the checkpoint to '%s', an operator of two "
                               "inputs whose inputs run at another parallelism now: which input it "
                               "was of is not known (give the job the checkpoint's parallelism)",
                          op->name);
    }
    side = chan >= first2;
    pos = side ? chan - first2 : chan;
  }
  wm_op *via = NULL, *to = NULL;
  int at = 0, best = 0;
  for (size_t i = 0; i < ctx->nops && best < 3; i++) {
    wm_op *f = ctx->ops[i];
    int xch = !strcmp(f->vt->kind, "exchange");
    for (int p = 0; p < f->nports && best < 3; p++)
      for (int e = 0; e < f->ports[p].n; e++) {
        const wm_edge *ed = &f->ports[p].edges[e];
        if (ed->to->node != node || ed->to->role != WM_ROLE_MAIN) continue;
        int now = ed->chan;
        if (side >= 0) {
          if (wm_op_input_of(ed->to, ed->chan) != side) continue;
          if (side) now -= ed->to->in2;
        }
        int score = (now == pos) * 2 + (xch || ed->to->subtask == sub || ed->to->nsub == 1);
        if (score <= best) continue;
        best = score;
        via = xch ? f : NULL;
        to = ed->to;
        at = ed->chan;
      }
  }
  if (!to) return wm_ctx_error(ctx, "a record in flight at the checkpoint went to an operator "
                                    "this job does not feed (the job changed since the "
                                    "checkpoint)");
  const wm_pos *outer = ctx->pos;
  ctx->pos = NULL;
  int rc = WM_OK;
  if (via && wm_exchange_mode(via) == WM_XCH_BROADCAST) {
    /* a broadcast record that old instance `sub` had not processed yet, while the others
     * may have (those on the sender's thread had): it goes to the new instances whose
     * broadcast state is that old instance's, and only to them (through the exchange, to
     * every instance, the others counted it twice) */
    uint32_t groups = ctx->key_groups ? ctx->key_groups : WM_KEYGROUPS_DEFAULT;
    for (int p = 0; p < via->nports && rc == WM_OK; p++)
      for (int e = 0; e < via->ports[p].n && rc == WM_OK; e++) {
        const wm_edge *ed = &via->ports[p].edges[e];
        int from = state_from(rp->r, ed->to, groups);
        if (from == sub || (from < 0 && ed->to->subtask == sub))
          if (wm_op_input_record(ed->to, ed->chan, rec, t) == WM_ERR)
            rc = wm_op_failed(ed->to, WM_ERR);
      }
    ctx->pos = outer;
    return rc;
  }
  rc = via ? wm_op_deliver(via, 0, rec, t) : wm_op_input_record(to, at, rec, t);
  ctx->pos = outer;
  return rc == WM_ERR ? wm_op_failed(via ? via : to, rc) : WM_OK;
}

int wm_rescale_replay(wm_rescale *r, wm_ctx *ctx, const wm_codec_host *codec) {
  replay rp = {r, ctx, NULL, NULL, 0};
  for (size_t k = 0; k < r->n; k++)
    if (r->l[k].node > rp.nodes) rp.nodes = r->l[k].node;
  rp.gid0 = calloc((size_t)rp.nodes + 1, sizeof *rp.gid0);
  rp.nsub = calloc((size_t)rp.nodes + 1, sizeof *rp.nsub);
  if (!rp.gid0 || !rp.nsub) {
    free(rp.gid0);
    free(rp.nsub);
    return wm_ctx_error(ctx, "out of memory");
  }
  for (size_t k = 0; k < r->n; k++)
    if (!r->l[k].src && r->l[k].role == WM_ROLE_MAIN) rp.nsub[r->l[k].node] = r->l[k].nsub;
  uint32_t g = 0;
  for (uint32_t n = 1; n <= rp.nodes; n++) {
    rp.gid0[n] = g;
    g += (uint32_t)rp.nsub[n];
  }
  int rc = WM_OK;
  for (size_t k = 0; k < r->np && rc == WM_OK; k++)
    if (!strncmp(r->parts[k].name, "chan-", 5))
      rc = wm_mt_decode_channel(ctx, codec, r->parts[k].data, r->parts[k].len, on_msg, &rp);
  free(rp.gid0);
  free(rp.nsub);
  return rc;
}
