/* What read_kafka and write_kafka share: a librdkafka configuration. */
#ifndef WM_KAFKA_H
#define WM_KAFKA_H

#include <stddef.h>

#include <librdkafka/rdkafka.h>

#include "base/wm_error.h"

/* A configuration with bootstrap.servers, quiet logging (errors come through the error
 * and delivery callbacks), the settings name=value given in sets (nsets strings, set
 * before props) and the user's props (name, value, ...). NULL with the failure in *err
 * (NULL: none wanted). */
rd_kafka_conf_t *wm_kafka_conf(const char *brokers, const char *const *sets, int nsets,
                               const char *const *props, int nprops, wm_error *err);

#endif
