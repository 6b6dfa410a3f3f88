/* Real inputs and outputs on libuv: line sources (files, standard input, followed files,
 * TCP clients and servers) with line framing in C and reusable read buffers, and sinks
 * that write asynchronously (write_lines, write_socket) under backpressure. Every source
 * implements the source interface (wm_source.h) and runs on a wm_io_host; one file per
 * kind: wm_src_file.c, wm_src_stream.c (standard input, FIFOs, socket_lines),
 * wm_src_listen.c, wm_sink_write.c, wm_print.c (wm_print.h). Each line is emitted with
 * its position (origin, line number, byte offset of its start).
 *
 * Line sources emit each line as a borrowed string (WM_CSTR, without "\n" or "\r\n"),
 * valid only during the emit: complete lines are passed straight from the read buffer,
 * only a line split across two reads is copied (into a carry buffer). A line longer than
 * max_line is an error naming the line number. Bytes pass through as they are (invalid
 * UTF-8 included). A last line without "\n" still counts at the real end of the input;
 * a drain (SIGINT) never emits a partial line.
 *
 * Asynchronous sinks report the bytes they have queued to the executor
 * (wm_io_pressure); above the high mark every source stops reading until the queue
 * drains, so memory stays bounded however fast the input is.
 */
#ifndef WM_IO_H
#define WM_IO_H

#include <stdio.h>

#include "base/wm_buf.h"
#include "graph/wm_graph.h"

#include "io/wm_source.h"

/* ---- files and standard input ------------------------------------------------------ */

typedef struct wm_lines_config {
  const char *path;      /* "-" = standard input */
  size_t max_line;       /* bytes; longer lines are an error (default 1 MiB) */
  size_t chunk;          /* read size (default 256 KiB; at most 64 MiB) */
  int follow;            /* at the end of the file, wait for more (tail -F: truncation,
                            rewriting and rotation are followed, see wm_src_file.c); never ends */
  int64_t poll_ms;       /* follow: how often to look for growth besides inotify (1000) */
  int part, parts;       /* a regular file read by `parts` instances (not followed): this one
                            reads part `part` (0-based), the lines that start in its byte
                            range [size*part/parts, size*(part+1)/parts); parts <= 1: all */
} wm_lines_config;

/* A source operator reading lines. Opening happens here, so a missing file is reported
 * before the job starts: "cannot open 'x.csv': No such file or directory". NULL on failure. */
wm_op *wm_lines_new(wm_io_host *host, const char *name, const wm_lines_config *cfg);
/* How far a file source has read (the progress line): *done of *total bytes. 1 for a
 * regular file that is not followed, else 0 (outputs untouched). */
int wm_lines_progress(const wm_op *op, int64_t *done, int64_t *total);

/* ---- TCP ------------------------------------------------------------------------- */

typedef struct wm_tcp_config {
  const char *host;      /* a name or an address; resolved here, before the job starts */
  int port;              /* listen: 0 = any free port (announced on stderr) */
  size_t max_line;       /* as wm_lines_config */
  size_t chunk;          /* read size (default 64 KiB) */
  int max_clients;       /* listen: stop accepting after this many clients, and end once
                            they have all closed; 0 = accept forever */
  int quiet;             /* listen: do not announce "listening on host:port" on stderr */
} wm_tcp_config;

/* A TCP client reading lines until the peer closes (Flink's socketTextStream). A name that
 * does not resolve fails here; a refused connection fails the job: "cannot connect to
 * 127.0.0.1:9999: connection refused"; so does a connection reset by the peer ("cannot
 * read 127.0.0.1:9999: connection reset by peer"). */
wm_op *wm_socket_lines_new(wm_io_host *host, const char *name, const wm_tcp_config *cfg);
/* A TCP server: lines from every client that connects (each framed on its own). Binds and
 * listens here. */
wm_op *wm_listen_lines_new(wm_io_host *host, const char *name, const wm_tcp_config *cfg);
/* The port a listen_lines source is bound to. */
int wm_listen_lines_port(const wm_op *op);

/* ---- asynchronous sinks ----------------------------------------------------------- */

/* Turns a record into one line of text (without "\n"), appended to out. WM_OK or WM_ERR. */
typedef struct wm_formatter {
  int (*fn)(void *ud, wm_op *op, const wm_value *rec, wm_buf *out);
  void (*free)(void *ud);
  void *ud;
} wm_formatter;

enum { WM_FMT_JSON = 0, WM_FMT_TEXT = 1, WM_FMT_CUSTOM = 2 };

typedef struct wm_write_config {
  const char *path;      /* write_lines: the file (created or truncated) */
  const char *host;      /* write_socket */
  int port;
  int format;            /* WM_FMT_JSON: compact JSON, keys sorted (strings quoted);
                            WM_FMT_TEXT: as print shows it; WM_FMT_CUSTOM: custom */
  wm_formatter custom;   /* owned by the sink from now on */
  size_t buffer;         /* bytes gathered before a write (default 64 KiB) */
} wm_write_config;

/* write_lines(path): one line per record, buffered, flushed at the end of input. The file
 * is opened here. NULL on failure. */
wm_op *wm_write_lines_new(wm_io_host *host, const char *name, wm_write_config *cfg);
/* write_socket(host, port): a TCP client sink; connects here (asynchronously); lines wait
 * in the buffer until the connection is up. */
wm_op *wm_write_socket_new(wm_io_host *host, const char *name, wm_write_config *cfg);

#include "io/wm_print.h"

#endif
