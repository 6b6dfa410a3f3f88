/* What read_nats and write_nats share: connecting to a NATS server with JetStream. */
#ifndef WM_NATS_H
#define WM_NATS_H

#include <stddef.h>

#include <nats/nats.h>

#include "base/wm_error.h"

/* Connects to url (reconnecting forever with backoff once connected; a lost connection and
 * its return are reported on stderr naming `who` and the address, which must outlive the
 * connection: "wmrun: <who>: lost the connection (reconnecting)") and makes a JetStream
 * context. 0, or -1 with the failure in *err (NULL: none wanted): "cannot connect to
 * nats://...: ...". */
int wm_nats_connect(const char *url, const char *who, natsConnection **nc, jsCtx **js, wm_error *err);
/* "<name>: the NATS server at <url>" (caller frees; NULL when out of memory): the `who`
 * of wm_nats_connect. */
char *wm_nats_who(const char *name, const char *url);
/* Closes and destroys what wm_nats_connect made (either may be NULL). */
void wm_nats_close(natsConnection *nc, jsCtx *js);
/* The text of a JetStream call's failure: the server's error code when there is one. */
const char *wm_nats_why(natsStatus s, jsErrCode jerr, char *buf, size_t n);

#endif
