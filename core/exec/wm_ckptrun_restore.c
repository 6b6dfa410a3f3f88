/* Restoring a checkpoint or a savepoint: the newest complete one of the store (or the savepoint
 * --from-savepoint names), its parts handed to the operators and sources, part for part or,
 * at another parallelism or thread count, key group by key group (exec/wm_rescale.h). */
#include "exec/wm_ckptrun.h"
#include "exec/wm_ckptrun_int.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_keygroup.h"
#include "exec/wm_rescale.h"
#include "exec/wm_savepoint.h"
#include "graph/wm_snapshot.h"
#include "io/wm_conn.h"


static void on_warn(void *ud, const char *message) {
  wm_ckptrun *c = ud;
  if (c->cfg.instance == 0) fprintf(c->cfg.log, "wmrun: warning: %s\n", message);
}

/* The value of "key " at the start of a line of meta, or NULL; *n its length. */
static const char *meta_field(const char *meta, size_t len, const char *key, size_t *n) {
  size_t kl = strlen(key);
  const char *p = meta, *end = meta + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if ((size_t)(le - p) > kl && !memcmp(p, key, kl) && p[kl] == ' ') {
      *n = (size_t)(le - p - (ptrdiff_t)kl - 1);
      return p + kl + 1;
    }
    p = le + 1;
  }
  return NULL;
}

static int refuse(wm_ckptrun *c, uint64_t id, const char *why) {
  char msg[WM_ERROR_MSG];
  snprintf(msg, sizeof msg, "%s", why);
  wm_ctx_error(c->ctx, "cannot resume from checkpoint %" PRIu64 " in %s%s: %s\n  (%s)", id,
               c->rsp ? "savepoint " : "", c->rname, msg,
               !c->rsp ? "run with --fresh to start over and replace the checkpoints; docs/checkpoints.md"
               : c->cfg.threads > 1 ? "with --threads above 1 a savepoint restores only the job it was "
                                      "taken of: change a job from one taken at --threads 1; "
                                      "docs/checkpoints.md, \"Savepoints\""
                                    : "docs/checkpoints.md, \"Savepoints\"");
  return -1;
}

/* Whether the savepoint (meta) is of this job: 1 the same plan, 0 a changed job at the
 * parallelism and thread count it was taken at (its parts fitted by uid), -1 refused (a
 * changed job at another parallelism or thread count: its uid-less operators have no place to
 * be matched by). */
static int savepoint_plan(wm_ckptrun *c, uint64_t id, const char *meta, size_t mlen,
                          int threads_then) {
  char diff[500];
  int same = wm_savepoint_same_plan(c->ctx, meta, mlen, diff, sizeof diff);
  if (same < 0) return wm_ctx_error(c->ctx, "out of memory"), -1;
  int p_then = wm_savepoint_parallelism(meta, mlen), p_now = 1;
  for (size_t i = 0; i < c->ctx->nops; i++)
    if (c->ctx->ops[i]->node && c->ctx->ops[i]->nsub > p_now) p_now = c->ctx->ops[i]->nsub;
  if (same || (p_then == p_now && threads_then == c->cfg.threads)) return same;
  char then[64], now[64], why[WM_ERROR_MSG];
  int th = threads_then > 1 || c->cfg.threads > 1;
  snprintf(then, sizeof then, "-p %d%s%.0d", p_then, th ? " --threads " : "", th ? threads_then : 0);
  snprintf(now, sizeof now, "-p %d%s%.0d", p_now, th ? " --threads " : "", th ? c->cfg.threads : 0);
  snprintf(why, sizeof why, "it was taken at %s and this run is at %s, and the job changed (%s): "
                            "a savepoint restores a changed job only at the parallelism it was "
                            "taken at, and at another parallelism only the job it was taken of. "
                            "Resume the changed job at %s, then restore its next checkpoint at "
                            "%s (checkpoints rescale)", then, now, diff, then, now);
  refuse(c, id, why);
  return -1;
}

static int restore(wm_ckptrun *c);

int wm_ckptrun_restore(wm_ckptrun *c) {
  int rc = restore(c);
  ck_shared *sh = c->sh;
  uv_mutex_lock(&sh->mu);
  sh->ready++;
  uv_cond_broadcast(&sh->cond);
  uv_mutex_unlock(&sh->mu);
  return rc;
}

static int restore(wm_ckptrun *c) {
  wm_ctx *ctx = c->ctx;
  wm_error err;
  wm_ckpt_reader *r = NULL;
  wm_ckpt_store *sps = NULL; /* --from-savepoint: the savepoint's store */
  int locked = 0;
  c->rname = c->dir;
  int got = wm_ckpt_open_latest(c->sh->store, on_warn, c, &r, &err);
  if (got < 0) return wm_ckptrun_set_err(c, err.msg), -1;
  if (c->cfg.from_savepoint) {
    uv_mutex_lock(&c->sh->mu); /* one store open at a time: its lock is the process's */
    int sp = wm_savepoint_pick(c->cfg.from_savepoint, c->dir, got, &r, &sps, &ctx->error);
    if (sp == 1 && !c->sh->origin && !(c->sh->origin = strdup(c->cfg.from_savepoint)))
      sp = -1, wm_ctx_error(ctx, "out of memory");
    if (sp < 0) {
      wm_ckpt_reader_free(r);
      wm_ckpt_store_free(sps);
      uv_mutex_unlock(&c->sh->mu);
      return -1;
    }
    locked = 1; /* until the parts are read */
    c->rsp = sp;
    c->rname = sp ? c->cfg.from_savepoint : c->dir;
    got = 1;
  }
  if (got == 0) return 0;
  uint64_t id = wm_ckpt_reader_id(r);
  size_t mlen;
  const char *meta = wm_ckpt_reader_meta(r, &mlen);
  size_t hl = strlen(META_HEAD), n;
  int ret = -1, rescaled = 0;
  wm_rescale *rs = NULL;
  wm_part *parts = NULL;
  size_t np = wm_ckpt_reader_nparts(r);
  if (mlen < hl || memcmp(meta, META_HEAD, hl) != 0) {
    refuse(c, id, "it was not written by wmrun's job runner (no 'wmrun checkpoint 1' in its "
                  "MANIFEST)");
    goto out;
  }
  const char *th = meta_field(meta, mlen, "threads", &n);
  int threads_then = th ? atoi(th) : 0;
  if (threads_then < 1) {
    refuse(c, id, "its MANIFEST does not say how many threads took it");
    goto out;
  }
  uint32_t groups = ctx->key_groups ? ctx->key_groups : WM_KEYGROUPS_DEFAULT;
  const char *mp = meta_field(meta, mlen, "max_parallelism", &n);
  if (!mp || (uint32_t)atol(mp) != groups) {
    char why[600];
    if (!mp)
      snprintf(why, sizeof why, "it was written by a wmrun from before key groups (its MANIFEST "
                                "has no max_parallelism): its keyed state was divided among the "
                                "instances by another rule than this wmrun's key_by, so keys "
                                "would meet state that is not theirs");
    else
      snprintf(why, sizeof why, "it was taken with max_parallelism %ld and this run has %u: the "
                                "max parallelism is the number of key groups that keyed state "
                                "is stored by, and cannot change for a job's state (give this "
                                "run --max-parallelism %ld, or wm.env{max_parallelism = %ld})",
               atol(mp), groups, atol(mp), atol(mp));
    refuse(c, id, why);
    goto out;
  }
  if (!(parts = calloc(np ? np : 1, sizeof *parts))) {
    wm_ctx_error(ctx, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < np; i++) {
    uint8_t *data;
    size_t len;
    parts[i].name = wm_ckpt_reader_part_name(r, i);
    int g = wm_ckpt_get(r, parts[i].name, &data, &len, &err);
    if (g != 1) {
      refuse(c, id, g == 0 ? "a part listed in its MANIFEST is missing" : err.msg);
      goto out;
    }
    parts[i].data = data;
    parts[i].len = len;
  }
  if (locked) {
    wm_ckpt_store_free(sps);
    sps = NULL;
    uv_mutex_unlock(&c->sh->mu);
    locked = 0;
  }
  const char *origin = meta_field(meta, mlen, "from-savepoint", &n);
  uv_mutex_lock(&c->sh->mu); /* a history that started from a savepoint: later ones say so */
  if (origin && !c->rsp && !c->sh->origin) c->sh->origin = strndup(origin, n);
  uv_mutex_unlock(&c->sh->mu);
  /* a savepoint on one thread: the same job is restored as a checkpoint is (at another
   * parallelism or thread count, key group by key group); a changed job has its parts fitted
   * by uid, at the parallelism and thread count the savepoint was taken at only */
  int same = c->rsp && c->cfg.threads <= 1 ? savepoint_plan(c, id, meta, mlen, threads_then) : 0;
  if (same < 0) goto out;
  if (c->rsp && c->cfg.threads <= 1 && !same) {
    if (wm_savepoint_refit(ctx, c->exec, c->cfg.codec, meta, mlen, &parts, &np,
                           c->cfg.allow_non_restored, c->rname, c->cfg.log) != WM_OK) {
      refuse(c, id, wm_ctx_errtext(ctx));
      goto out;
    }
    c->rsp = 2; /* the names are owned too */
  }
  ctx->allow_state_change = c->cfg.allow_state_change;
  ctx->state_changes = 0;
  /* the checkpoint's operators are this run's, part for part; else it is restored key group
   * by key group (another parallelism or thread count: exec/wm_rescale.h). A savepoint's parts
   * were fitted to this job's operators by uid above: they are restored as they are. */
  if (c->rsp != 2 && !(rs = wm_rescale_new(meta, mlen, parts, np, &ctx->error))) {
    refuse(c, id, ctx->error.msg); /* refuse copies the message before it sets a new one */
    goto out;
  }
  rescaled = rs && !wm_rescale_same(rs, ctx, c->cfg.instance, threads_then, c->cfg.threads);
  if (rescaled && c->cfg.threads > 1 && wm_rescale_has_channels(rs)) {
    char why[400];
    snprintf(why, sizeof why, "it was taken with --threads %d and holds records in flight "
                              "between threads, which a run at another parallelism or thread "
                              "count takes only on one thread (run it with --threads 1 until its "
                              "next checkpoint)", threads_then);
    refuse(c, id, why);
    goto out;
  }
  if (rescaled ? wm_rescale_restore(rs, ctx, c->cfg.codec, groups)
               : wm_ctx_restore(ctx, c->cfg.instance, c->cfg.codec, parts, np)) {
    refuse(c, id, wm_ctx_errtext(ctx));
    goto out;
  }
  if (ctx->state_changes && c->cfg.instance == 0) /* thread 1 says it for every thread */
    fprintf(c->cfg.log, "wmrun: warning: --allow-state-change: the function of %d window "
                        "operator%s changed since checkpoint %" PRIu64 "; the windows open "
                        "then go on from the state the old function made\n",
            ctx->state_changes, ctx->state_changes > 1 ? "s" : "", id);
  for (int i = 0; i < wm_exec_nsources(c->exec); i++) {
    wm_op *src = wm_exec_source_op(c->exec, i);
    char name[260] = "src-";
    if (rescaled) {
      if (!src->node) continue; /* the receiver between threads: anew */
      const wm_part **sp;
      size_t nsp;
      int src_rc = wm_rescale_source(rs, ctx, src, &sp, &nsp);
      for (size_t k = 0; k < nsp && src_rc == WM_OK; k++)
        src_rc = wm_exec_restore_source(c->exec, src, (const char *)sp[k]->data, sp[k]->len);
      free(sp);
      if (src_rc != WM_OK) {
        refuse(c, id, wm_ctx_errtext(ctx));
        goto out;
      }
      continue;
    }
    if (wm_op_part_name(src, wm_ckptrun_op_place(ctx, src), c->cfg.instance, name + 4, sizeof name - 4) != 0) {
      wm_ctx_error(ctx, "the part name of source '%s' is too long", src->name);
      goto out;
    }
    size_t k = 0;
    while (k < np && strcmp(parts[k].name, name) != 0) k++;
    if (k == np) {
      char why[400];
      snprintf(why, sizeof why, "it holds no position of source '%s' (the job changed since "
                                "the checkpoint)", src->name);
      refuse(c, id, why);
      goto out;
    }
    if (wm_exec_restore_source(c->exec, src, (const char *)parts[k].data, parts[k].len) != WM_OK) {
      refuse(c, id, wm_ctx_errtext(ctx));
      goto out;
    }
  }
  /* what was in flight between the threads at the cut: rescaled, all of it (one thread) */
  if (rescaled && wm_rescale_replay(rs, ctx, c->cfg.codec) != WM_OK) {
    refuse(c, id, wm_ctx_errtext(ctx));
    goto out;
  }
  /* what was in flight to this thread at the cut (several threads) */
  char cpre[32];
  int cl = snprintf(cpre, sizeof cpre, "-%d", c->cfg.instance);
  for (size_t k = 0; k < np; k++) {
    const char *pn = parts[k].name;
    size_t pl = strlen(pn);
    if (rescaled || strncmp(pn, "chan-", 5) != 0 || pl < 5 + (size_t)cl ||
        strcmp(pn + pl - cl, cpre) != 0)
      continue;
    if (!c->mt) {
      refuse(c, id, "it holds the state of a channel between threads");
      goto out;
    }
    int from = atoi(pn + 5);
    if (wm_mt_replay_channel(c->mt, from, parts[k].data, parts[k].len) != WM_OK) {
      refuse(c, id, wm_ctx_errtext(ctx));
      goto out;
    }
  }
  const char *fin = meta_field(meta, mlen, "final", &n);
  int final = fin && n == 1 && fin[0] == '1';
  uint64_t now = wm_ckptrun_wall_ms(), created = wm_ckpt_reader_created_ms(r);
  double age = now > created ? (double)(now - created) / 1000.0 : 0.0;
  if (c->cfg.instance != 0) {
    /* thread 1 says it */
  } else if (final) {
    fprintf(c->cfg.log, "wmrun: checkpoint %" PRIu64 " in %s (%.1f s old) is of a run that "
                        "ended: its input was read to the end, so there is nothing new to do "
                        "(--fresh starts over)\n", id, c->dir, age);
  } else {
    fprintf(c->cfg.log, "wmrun: resuming from checkpoint %" PRIu64 " in %s%s, taken %.1f s ago\n",
            id, c->rsp ? "savepoint " : "", c->rname, age);
    if (rescaled)
      fprintf(c->cfg.log, "  taken at another parallelism or thread count (--threads %d then): "
                          "keyed state restored by key group (max_parallelism %u)\n",
              threads_then, groups);
    /* the sources' positions, as the MANIFEST lists them */
    const char *p = meta, *end = meta + mlen;
    while (p < end) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      const char *le = nl ? nl : end;
      if (le - p > 7 && !memcmp(p, "source ", 7)) {
        const char *sp = memchr(p + 7, ' ', (size_t)(le - p - 7));
        if (sp) fprintf(c->cfg.log, "  source at %.*s\n", (int)(le - sp - 1), sp + 1);
      }
      p = le + 1;
    }
  }
  if (final) {
    /* the run that wrote it may have been killed before the group's offsets had its
     * positions (Kafka's commits are asynchronous): commit them again, for monitoring */
    wm_error cerr;
    for (int i = 0; i < wm_exec_nsources(c->exec); i++) {
      wm_op *src = wm_exec_source_op(c->exec, i);
      if (wm_op_is_partsrc(src) && wm_partsrc_commit_final(src, &cerr) != WM_OK)
        fprintf(c->cfg.log, "wmrun: warning: checkpoint %" PRIu64 ": %s (the positions are in the "
                            "checkpoint; only monitoring misses them)\n", id, cerr.msg);
    }
  }
  uv_mutex_lock(&c->sh->mu);
  c->sh->st.restored_id = id;
  if (!c->sh->st.taken) c->sh->st.last_id = id;
  uv_mutex_unlock(&c->sh->mu);
  ret = final ? 2 : 1;
out:
  wm_rescale_free(rs);
  if (c->rsp == 2) {
    wm_savepoint_parts_free(parts, np);
  } else {
    if (parts)
      for (size_t i = 0; i < np; i++) free((void *)parts[i].data);
    free(parts);
  }
  wm_ckpt_reader_free(r);
  if (locked) {
    wm_ckpt_store_free(sps);
    uv_mutex_unlock(&c->sh->mu);
  }
  c->rsp = 0;
  return ret;
}
