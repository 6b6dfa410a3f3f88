/* A failure as data: its message and the parts that say where it happened.
 *
 * The core never writes "in operator ..." or "while reading ..." into a message, nor reads
 * a message to decide whether such a line is there: it records parts (the operator that
 * failed, the record, the position of the input line, a line of context such as the
 * checkpoint being taken, the host's traceback as an opaque string) in the context's
 * wm_error, and the top (the bindings, wmrun) formats them once with wm_error_format.
 *
 * The text is the one wmrun has always printed:
 *
 *   <message>                        msg
 *     in operator '<name>'           WM_EPART_OP       (the innermost failing operator, once)
 *                                    WM_EPART_WHERE    (its job script line, once; no text of
 *                                                       its own: the operator's name, made
 *                                                       from it when the job was built, shows
 *                                                       it, as "map (job.lua:12)")
 *     on record <record>             WM_EPART_RECORD
 *     while reading <position>       WM_EPART_POS      (once; none when the message starts
 *                                                       with it: WM_EPART_POS_SHOWN)
 *     <context line>                 WM_EPART_CONTEXT  (e.g. "while taking checkpoint 3 in ck")
 *   <traceback>                      trace             (from the host, never parsed here)
 *   <lines added after the traceback> tail
 *
 * Parts other than the traceback keep the order they were added in (innermost first).
 *
 * The one error convention of the core: a function that can fail returns WM_ERR (or -1, or
 * NULL) and fills the wm_error it was given, its context's (ctx->error, wm_ctx_error) or the
 * caller's (a `wm_error *err` parameter, for functions that have no context: the checkpoint
 * stores, the transports, the supervisor, the job of the threads); it never writes
 * formatted text into a caller's buffer. A wm_error holds no pointers (its parts are offsets
 * into its own buffer), so it is passed between threads by value: a struct copy.
 */
#ifndef WM_ERROR_H
#define WM_ERROR_H

#include <stdarg.h>
#include <stddef.h>

enum {
  WM_EPART_OP = 1,    /* text: the operator's name */
  WM_EPART_RECORD,    /* text: the record as print shows it (already cut by the host) */
  WM_EPART_POS,       /* text: the position ("data.csv:17") */
  WM_EPART_POS_SHOWN, /* the message itself starts with the position: no line */
  WM_EPART_CONTEXT,   /* text: a whole line, starting with "\n" */
  WM_EPART_WHERE      /* text: the job script's line that made the operator ("job.lua:12") */
};

#define WM_ERROR_MSG 4096 /* the message, and the formatted text, are cut to this size */
#define WM_ERROR_MAXPARTS 16

typedef struct wm_error {
  char msg[WM_ERROR_MSG]; /* the message ("" when no failure) */
  struct {
    unsigned char kind;
    unsigned short off, len; /* its text in buf */
  } part[WM_ERROR_MAXPARTS];
  int nparts;
  size_t buflen;
  char buf[2048];           /* the parts' texts */
  char trace[WM_ERROR_MSG]; /* the host's traceback, starting with "\n" ("" when none) */
  char tail[1024];          /* text added after the traceback */
  char text[WM_ERROR_MSG];  /* wm_error_format's result */
} wm_error;

/* No failure. */
void wm_error_clear(wm_error *e);
/* A new failure: the message, no parts. */
void wm_error_vset(wm_error *e, const char *fmt, va_list ap);
/* As wm_error_vset; returns -1. Nothing when e is NULL (a caller that wants no message). */
int wm_error_set(wm_error *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The message was written into e->msg directly: the parts of an earlier failure dropped. */
void wm_error_took(wm_error *e);
/* Adds a part of a kind (WM_EPART_*). An operator or a position is kept once: the first one
 * added (the innermost) stays. */
void wm_error_add(wm_error *e, int kind, const char *text);
void wm_error_set_op(wm_error *e, const char *name);
void wm_error_set_record(wm_error *e, const char *text);
void wm_error_set_pos(wm_error *e, const char *pos);
void wm_error_pos_shown(wm_error *e);
void wm_error_set_where(wm_error *e, const char *where);
/* A line of context ("\n  while ..."), after the parts so far, before the traceback. */
void wm_error_vcontext(wm_error *e, const char *fmt, va_list ap);
/* The host's traceback (starting with "\n"), kept as it is. */
void wm_error_set_trace(wm_error *e, const char *trace, size_t n);
/* Text added at the end of the whole failure: to the message while it has no parts, else
 * as a line of context, or after the traceback once there is one. */
void wm_error_vappend(wm_error *e, const char *fmt, va_list ap);
/* The text of a part of that kind (the first one), or NULL. */
const char *wm_error_part(const wm_error *e, int kind, size_t *len);
/* The whole failure as text (in e->text, cut to WM_ERROR_MSG - 1 bytes). */
const char *wm_error_format(wm_error *e);

#endif
