/* Choosing a transport's backend by the target's kind (wm_transport.h), for its users that
 * write to either (the repartitioning writer); the sinks call their own backend. */
#include "io/wm_transport.h"

int wm_transport_make(const wm_transport_target *t, int timeout_ms, int64_t *last, wm_error *err) {
  *last = 0;
  if (t->kind == WM_TRANSPORT_KAFKA) return wm_transport_kafka_make(t, timeout_ms, err);
  return wm_transport_nats_make(t, last, err);
}

wm_transport *wm_transport_open(const wm_transport_config *cfg, wm_error *err) {
  if (cfg->target.kind == WM_TRANSPORT_KAFKA) return wm_transport_kafka_open(cfg, err);
  return wm_transport_nats_open(cfg, err);
}
