/* What the transports share (wm_transport.h): keeping the first failure, and the message
 * that reports it. The backends use it; choosing one is wm_transport_open.c's (above both). */
#include "io/wm_transport.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wm_transport_free(wm_transport *t) {
  if (t) t->vt->free(t);
}

int wm_transport_init(wm_transport *t, const wm_transport_vt *vt, const char *verb, const char *dest,
                      const char *server, const char *label) {
  t->vt = vt;
  t->verb = verb;
  atomic_init(&t->failed, 0);
  t->dest = strdup(dest ? dest : "");
  t->server = strdup(server ? server : "");
  t->label = strdup(label ? label : "");
  return t->dest && t->server && t->label ? 0 : -1;
}

void wm_transport_fini(wm_transport *t) {
  free(t->dest);
  free(t->server);
  free(t->label);
}

void wm_transport_fail(wm_transport *t, const char *fmt, ...) {
  if (atomic_load(&t->failed)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->why, sizeof t->why, fmt, ap);
  va_end(ap);
  atomic_store(&t->failed, 1);
}

int wm_transport_error(wm_op *op, const wm_transport *t) {
  return wm_ctx_error(op->ctx, "%s: cannot %s '%s' at %s: %s", op->name, t->verb, t->dest, t->server,
                      t->why);
}
