/* The scale-out supervisor (docs/scaleout.md): a process that joins a group (wm_member.h)
 * and runs one child process per partition it owns, the task of that partition: the same
 * wmrun binary with the same arguments, told its task by the environment
 *
 *   WM_TASK="<execute index> <source node> <source> <partition> <task name>"
 *     e.g. "1 3 events 2 events-2": the first env:execute() of the script, plan node 3
 *     (a read_kafka with scale_out), topic "events", partition 2, task "events-2";
 *   WM_TASK_STATUS_FD=3   the child writes status lines there: "<offset> <watermark>\n"
 *                         (the position of its partition's next record, its watermark in
 *                         ms; "-" when not known);
 *   WM_TASK_PARENT_FD=4   the child reads it: end of file means that the supervisor died
 *                         (with PR_SET_PDEATHSIG on Linux), and it exits at once.
 *
 * The task name is the partition's name ("events/2") with every character other than
 * letters, digits, '.', '_' and '-' made '-', prefixed by "x<index>." for a scale-out
 * execute() other than the script's first. Its checkpoints are in
 * <checkpoint dir>/task-<name>/ (a folder, or the path of a store's URL), and the mark ENDED
 * of task-<name> (wm_ckpt_store.h: the file task-<name>/ENDED of a folder, the key
 * task-<name>=ENDED of a NATS store) says that its input ended.
 *
 * Revoke: SIGTERM to the child (final checkpoint, exit 0), then wm_member_release. Lost:
 * SIGKILL. A child that fails is started again after a backoff (cfg->backoff_ms, doubling;
 * wmrun --restart-backoff); after 5 failures in a row
 * the supervisor fails naming the task and its last line on stderr. SIGTERM or SIGINT to the
 * supervisor stops every child (final checkpoints) and ends the run (0); so does the end
 * of every partition of the subscription (every task ENDED, whoever ran it; not those the
 * backend calls foreign, outside a static share). SIGUSR1
 * prints the table of owned partitions on stderr.
 */
#ifndef WM_SUPER_H
#define WM_SUPER_H

#include <stdint.h>
#include <stdio.h>

#include "base/wm_error.h"
#include "io/wm_member.h"

typedef struct wm_super_config {
  const char *exe;             /* the wmrun binary */
  const char *const *args;     /* the child's argv[1..]: wmrun's own arguments */
  int nargs;
  const char *ckdir;           /* the checkpoint folder or store URL every process shares */
  int index;                   /* the execute() call (1-based) */
  int node;                    /* the source's plan node */
  wm_member_common member;     /* group, sources, counts (notify is the supervisor's) */
  /* Creates the membership backend on c (borrowed); NULL with err. */
  wm_member *(*member_new)(const wm_member_common *c, void *ud, wm_error *err);
  void *member_ud;
  int metrics;                 /* print the table of partitions at the end */
  int64_t backoff_ms;          /* a failed task's first back-off (doubling); 0: 200 ms */
  FILE *log;                   /* stderr */
  /* Beginnings of a child's stderr lines that are not a failure's message (NULL-ended; NULL:
   * none): the host's traceback header, the notice of a resume. The supervisor keeps the last
   * other line that is not indented as the task's failure; it knows no language's text. */
  const char *const *quiet_lines;
} wm_super_config;

/* The task name of partition `pname` ("events/2") for execute() call `index`, into buf. */
void wm_super_task_name(int index, const char *pname, char *buf, size_t n);

/* Runs the supervisor until it is stopped (SIGTERM/SIGINT) or every partition has ended:
 * 0; -1 with err when it fails (the group, a task failing 5 times in a row). */
int wm_super_run(const wm_super_config *cfg, wm_error *err);

#endif
