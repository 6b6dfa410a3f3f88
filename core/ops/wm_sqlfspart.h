/* The filesystem sink of a SQL table `PARTITIONED BY (a, b)` with 'format' = 'csv' (Nexmark
 * q10), in C: the hot path of lua/wm/sql/connector_fs_partitioned.lua, which stays the
 * reference (WMRUN_SQL_FS_SINK=lua runs it) and whose files this operator writes byte for
 * byte: each row's line (the columns that are not partition columns, CSV as the Lua sink's
 * `fmt`: NULL as the null literal, a field with the delimiter, a quote, CR or LF quoted with
 * its quotes doubled) goes to `<path>/a=<value>/b=<value>/part-0-<n>` (values escaped as
 * Flink's PartitionPathUtils.escapePathName, NULL as __DEFAULT_PARTITION__).
 *
 * A part file's lines are kept in the operator's state (checkpointed) until the file rolls,
 * then written whole into `.part-0-<n>.inprogress` and renamed. Rolls and commits fall where
 * the Lua sink's do: a file rolls when its partition commits, when it has been open the
 * rollover interval (checked every check interval of processing time) and at the end of the
 * input; a partition commits (an empty `_SUCCESS` with success = 1) by partition time (the
 * watermark passes the pattern's time plus the delay) or by processing time (its first row's
 * plus the delay). The timers are the Lua keyed process function's: one list of partitions
 * per (time domain, time), fired in time order, each list in registration order.
 * Checkpoints: the partitions (folder, next file number, pending lines, opening time,
 * partition time), the check timer and the timer lists; a restore asks for the
 * processing-time timers again. A resumed job writes the files written after the checkpoint
 * again under the same names. */
#ifndef WM_SQLFSPART_H
#define WM_SQLFSPART_H

#include "base/wm_buf.h"
#include "base/wm_value.h"
#include "graph/wm_graph.h"

/* How a column's value is written (values.lua's to_string for the column's type). */
typedef enum { WM_FSP_PLAIN, WM_FSP_BOOLEAN, WM_FSP_TIMESTAMP, WM_FSP_STRING } wm_fsp_kind;

typedef struct wm_fspart_config {
  const char *path;                /* the table's folder, without a trailing '/' */
  int ncols;                       /* partition columns, in PARTITIONED BY order */
  const char *const *cols;
  const uint8_t *col_kinds;        /* wm_fsp_kind each */
  int nfields;                     /* the columns of the lines */
  const char *const *fields;
  const uint8_t *kinds;
  char delim;                      /* 'csv.field-delimiter' */
  const char *null_literal;        /* 'csv.null-literal' ("" by default) */
  int partition_time;              /* 1 'partition-time', 0 'process-time' */
  int success;                     /* 'success-file' */
  int64_t delay, rollover, check;  /* ms */
  const char *pattern;             /* 'partition.time-extractor.timestamp-pattern' (partition_time) */
  const char *what;                /* errors start with it: "table 'out' (INSERT INTO at job.sql:9:1)" */
} wm_fspart_config;

/* The operator (every string copied). NULL on failure, with the message in ctx. */
wm_op *wm_fspart_new(wm_ctx *ctx, const char *name, const wm_fspart_config *cfg);

/* Helpers (exposed for the tests). */
/* Appends v as values.lua's to_string(v, type) gives it for a column of this kind; v not nil. */
void wm_fspart_value(wm_buf *b, const wm_value *v, uint8_t kind);
/* Appends s as a CSV field: quoted, with '"' doubled, when it holds delim, '"', '\r' or '\n'. */
void wm_fspart_csv_field(wm_buf *b, const char *s, size_t n, char delim);
/* Appends s with the bytes Flink escapes in partition folder names as %XX. */
void wm_fspart_escape(wm_buf *b, const char *s, size_t n);
/* values.lua's parse_timestamp: "yyyy-M-d[( |T)H:mm[:ss[.f]]]" (blanks around allowed) as ms
 * since the epoch (UTC); 0, or -1 when s is no such timestamp. */
int wm_fspart_parse_ts(const char *s, size_t n, int64_t *ms);

#endif
