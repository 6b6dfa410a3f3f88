/* The connectors in the plan (lwm_conn.c): Kafka and NATS, and their helpers in wm.core. */
#ifndef LWM_CONN_H
#define LWM_CONN_H

#include "lwm.h"

/* The connectors (lwm_conn.c): read_kafka, write_kafka, read_nats, write_nats. */
int lwm_build_conn(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                   wm_op **op);
/* wm.core.kafka_partitions(brokers, topic[, props]), wm.core.nats_subjects(url, stream, filter) */
int lwm_kafka_partitions(lua_State *L);
int lwm_nats_subjects(lua_State *L);
/* wm.partition(key, n): NATS's partition() mapping function (base/wm_partition.h) */
int lwm_partition(lua_State *L);
/* wm.core.parse_partitions(spec, count): a static share "0-3,5" (base/wm_partition.h) */
int lwm_parse_partitions(lua_State *L);
/* wm.core._member_nats{...}: the NATS membership backend (io/wm_member.h), for its specs */
int lwm_member_nats(lua_State *L);

#endif
