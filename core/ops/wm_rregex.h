/* REGEXP_EXTRACT's regular expressions in C, for the SQL row expressions (ops/wm_rexpr.h):
 * the same syntax and the same matches as lua/wm/sql/regex.lua (the part of Java's syntax
 * that queries use, matched by backtracking as Java does: leftmost match, greedy quantifiers
 * unless followed by `?`, alternatives left to right; literals, `.` (a whole UTF-8
 * character), `[...]` and `[^...]` with ranges, `\d \D \w \W \s \S`, escaped punctuation,
 * `\t \n \r \f \e \a`, `^`, `$`, `\b \B`, `(...)`, `(?:...)`, `|`, `* + ? {n} {n,} {n,m}` and
 * their lazy forms). A pattern with anything else is refused with regex.lua's message.
 *
 * A compiled expression keeps its captures while it matches: it belongs to one program
 * (one operator instance), as the program does. */
#ifndef WM_RREGEX_H
#define WM_RREGEX_H

#include <stddef.h>

typedef struct wm_rregex wm_rregex;

/* Compiles pat (len bytes); NULL with the reason in err (regex.lua's words, or "out of
 * memory"). */
wm_rregex *wm_rregex_new(const char *pat, size_t len, char *err, size_t errsz);
void wm_rregex_free(wm_rregex *r);
/* The number of capturing groups. */
int wm_rregex_groups(const wm_rregex *r);

/* regex.extract: group g (0: the whole match, 1..groups) of the first match in s[0, n) as
 * s[*from, *to). Returns 1; 0 when nothing matches or the group took no part; -1 when the
 * match nests deeper than the C stack allows (a message for it: WM_RREGEX_DEEP). */
int wm_rregex_extract(wm_rregex *r, const char *s, size_t n, int g, size_t *from, size_t *to);
#define WM_RREGEX_DEEP "REGEXP_EXTRACT: the match nests too deep (a repeated group over a long input)"

#endif
