/*
 * handwritten.c - the tightest single-threaded C program for the benchmark job.
 *
 * Job (what the wmrun pipeline under test computes):
 *   source     CSV lines "id,ts,vc" from the file argv[1]
 *   timestamps event time = ts, watermark = bounded out-of-orderness 2000 ms,
 *              emitted after every record (watermark_interval = 0)
 *   key_by     id
 *   window     tumbling event-time windows of 5000 ms
 *   aggregate  sum("vc"): the first record of the window with vc := sum (Flink's rule)
 *   sink       one compact JSON line per window, keys sorted:
 *              {"id":"k000042","ts":1700000000123,"vc":57}
 *
 * Semantics follow docs/semantics (Flink 1.12+):
 *   - the assigner keeps max_ts (starting at MIN + d + 1) and emits
 *     W = max_ts - d - 1 after each record, only when W increases;
 *   - a record is handed to the window operator before the watermark it
 *     produces, so it is checked against the previous watermark;
 *   - window [s, s+5000) has max timestamp s+4999 and fires (and is deleted,
 *     allowed lateness 0) when W >= s+4999; a record whose window has
 *     max timestamp <= W is late: counted and dropped;
 *   - windows firing at the same time fire in the order they were created;
 *   - at end of input W = MAX: everything left fires.
 *
 * Data structures:
 *   - window map: open addressing (linear probing, backward-shift delete) on
 *     (id, window start); a 32-byte slot holds the first 8 id bytes inline
 *     and the running sum, so a record normally touches one cache line;
 *   - key table: interns each distinct id once, with its JSON-escaped form
 *     ready for output (touched only when a window is created);
 *   - timers: a sorted array of distinct firing times; each holds an
 *     intrusive FIFO list of its windows (creation order).
 *
 * The input is read with read(2) in large chunks (no mmap, so peak RSS is
 * the program's own state and not the page-cached input file).
 *
 * Build: gcc -std=c11 -O2 -Wall -Wextra -Werror -o handwritten handwritten.c
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_SIZE 5000
#define OUT_OF_ORDERNESS 2000

#define IN_CHUNK (4u << 20)
#define OUT_CAP (1u << 20)
#define NIL UINT32_MAX

/* ------------------------------------------------------------------ utils */

static void die(const char *msg)
{
    perror(msg);
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL && n != 0) {
        fputs("handwritten: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Hash of a short byte string, 8 bytes at a time. */
static inline uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    }
    return mix64(h);
}

/* ------------------------------------------------------------------ output */

static char out_buf[OUT_CAP];
static size_t out_len;

static void out_flush(void)
{
    size_t off = 0;
    while (off < out_len) {
        ssize_t w = write(STDOUT_FILENO, out_buf + off, out_len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die("handwritten: write");
        }
        off += (size_t)w;
    }
    out_len = 0;
}

/* Appends n bytes; data larger than the buffer goes straight to write(2). */
static void out_write(const char *s, size_t n)
{
    if (out_len + n > OUT_CAP)
        out_flush();
    if (n > OUT_CAP) {
        while (n > 0) {
            ssize_t w = write(STDOUT_FILENO, s, n);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                die("handwritten: write");
            }
            s += w;
            n -= (size_t)w;
        }
        return;
    }
    memcpy(out_buf + out_len, s, n);
    out_len += n;
}

static inline char *put_i64(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0)
        *p++ = '-';
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

/* ------------------------------------------------------------------ keys */

typedef struct {
    uint64_t hash;
    uint32_t off, len;         /* raw id in key_arena */
    uint32_t esc_off, esc_len; /* JSON-escaped id in key_arena */
} Key;

static Key *keys;
static uint32_t nkeys, keys_cap;
static uint32_t *key_slots; /* open addressing: key index or NIL */
static uint32_t key_mask;   /* table size - 1 */
static char *key_arena;
static size_t arena_len, arena_cap;

static void arena_reserve(size_t extra)
{
    if (arena_len + extra > arena_cap) {
        while (arena_len + extra > arena_cap)
            arena_cap = arena_cap ? 2 * arena_cap : 1 << 16;
        key_arena = xrealloc(key_arena, arena_cap);
    }
}

/* Same escaping rules as plain.lua: \" \\ \b \f \n \r \t, other control
 * characters as \u00XX, everything else verbatim. */
static void arena_put_escaped(const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    arena_reserve(6 * n);
    char *p = key_arena + arena_len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': *p++ = '\\'; *p++ = '"'; break;
        case '\\': *p++ = '\\'; *p++ = '\\'; break;
        case '\b': *p++ = '\\'; *p++ = 'b'; break;
        case '\f': *p++ = '\\'; *p++ = 'f'; break;
        case '\n': *p++ = '\\'; *p++ = 'n'; break;
        case '\r': *p++ = '\\'; *p++ = 'r'; break;
        case '\t': *p++ = '\\'; *p++ = 't'; break;
        default:
            if (c < 0x20) {
                memcpy(p, "\\u00", 4);
                p[4] = hex[c >> 4];
                p[5] = hex[c & 15];
                p += 6;
            } else {
                *p++ = (char)c;
            }
        }
    }
    arena_len = (size_t)(p - key_arena);
}

static void key_table_grow(void)
{
    uint32_t size = key_mask ? 2 * (key_mask + 1) : 1024;
    free(key_slots);
    key_slots = xrealloc(NULL, size * sizeof *key_slots);
    memset(key_slots, 0xff, size * sizeof *key_slots);
    key_mask = size - 1;
    for (uint32_t k = 0; k < nkeys; k++) {
        uint32_t i = (uint32_t)keys[k].hash & key_mask;
        while (key_slots[i] != NIL)
            i = (i + 1) & key_mask;
        key_slots[i] = k;
    }
}

static inline uint32_t key_intern(const char *s, uint32_t n)
{
    uint64_t h = hash_bytes(s, n);
    uint32_t i = (uint32_t)h & key_mask;
    for (;;) {
        uint32_t k = key_slots[i];
        if (k == NIL)
            break;
        const Key *e = &keys[k];
        if (e->hash == h && e->len == n && memcmp(key_arena + e->off, s, n) == 0)
            return k;
        i = (i + 1) & key_mask;
    }
    /* New key. */
    if (nkeys == keys_cap) {
        keys_cap = keys_cap ? 2 * keys_cap : 1024;
        keys = xrealloc(keys, keys_cap * sizeof *keys);
    }
    Key *e = &keys[nkeys];
    e->hash = h;
    arena_reserve(n);
    e->off = (uint32_t)arena_len;
    e->len = n;
    memcpy(key_arena + arena_len, s, n);
    arena_len += n;
    e->esc_off = (uint32_t)arena_len;
    arena_put_escaped(s, n);
    e->esc_len = (uint32_t)(arena_len - e->esc_off);
    key_slots[i] = nkeys;
    uint32_t k = nkeys++;
    if (2 * (uint64_t)nkeys > key_mask + 1u)
        key_table_grow();
    return k;
}

/* ------------------------------------------------------------------ windows */

typedef struct {
    int64_t start;
    int64_t first_ts; /* ts of the window's first record (Flink's sum() keeps it) */
    uint32_t key;     /* interned id, for output */
    uint32_t hash;    /* its map hash, to re-home map slots on delete/grow */
    uint32_t next;    /* next window in the same timer list, or in the free list */
} Window;

static Window *wins;
static uint32_t nwins_used, wins_cap, win_free = NIL;

/* One open (id, window start) pair. The hot path touches only this 32-byte
 * slot (one cache line): the first 8 bytes of the id are kept inline, so
 * for ids of up to 8 bytes no other memory is read, and the running sum
 * lives here too. Longer ids compare their tail against the key table. */
typedef struct {
    int64_t start;
    int64_t sum;
    uint64_t w0;     /* first min(8, idlen) bytes of the id, zero padded */
    uint32_t idlen;
    uint32_t win;    /* window index, NIL = empty slot */
} MapSlot;

static MapSlot *map;
static uint32_t map_mask, map_count;

/* Loads the first min(8, n) bytes of s as a little-endian word, zero padded.
 * May read up to 8 bytes past s (callers guarantee that memory exists);
 * the extra bytes are masked off. */
static inline uint64_t load_w0(const char *s, uint32_t n)
{
    uint64_t w;
    memcpy(&w, s, 8);
    return n >= 8 ? w : w & ((1ull << (8 * n)) - 1);
}

static inline uint32_t map_hash(uint64_t w0, const char *id, uint32_t n, int64_t start)
{
    uint64_t h = w0 * 0x9E3779B97F4A7C15ull ^ (uint64_t)start * 0xC2B2AE3D27D4EB4Full ^ n;
    if (n > 8)
        h ^= hash_bytes(id + 8, n - 8);
    return (uint32_t)mix64(h);
}

static void map_grow(void)
{
    uint32_t old_size = map_mask ? map_mask + 1 : 0;
    MapSlot *old = map;
    uint32_t size = old_size ? 2 * old_size : 1 << 12;
    map = aligned_alloc(64, size * sizeof *map);
    if (map == NULL)
        die("handwritten: aligned_alloc");
    for (uint32_t i = 0; i < size; i++)
        map[i].win = NIL;
    map_mask = size - 1;
    for (uint32_t j = 0; j < old_size; j++) {
        if (old[j].win == NIL)
            continue;
        uint32_t i = wins[old[j].win].hash & map_mask;
        while (map[i].win != NIL)
            i = (i + 1) & map_mask;
        map[i] = old[j];
    }
    free(old);
}

/* Removes window w from the map and returns its sum. Backward-shift
 * deletion keeps linear probing free of tombstones. */
static int64_t map_take(uint32_t w)
{
    uint32_t i = wins[w].hash & map_mask;
    while (map[i].win != w)
        i = (i + 1) & map_mask;
    int64_t sum = map[i].sum;
    uint32_t hole = i;
    for (;;) {
        i = (i + 1) & map_mask;
        if (map[i].win == NIL)
            break;
        uint32_t home = wins[map[i].win].hash & map_mask;
        /* Slot i may move back into the hole unless its home lies in (hole, i]. */
        if (((i - home) & map_mask) >= ((i - hole) & map_mask)) {
            map[hole] = map[i];
            hole = i;
        }
    }
    map[hole].win = NIL;
    map_count--;
    return sum;
}

static inline uint32_t win_alloc(void)
{
    if (win_free != NIL) {
        uint32_t w = win_free;
        win_free = wins[w].next;
        return w;
    }
    if (nwins_used == wins_cap) {
        wins_cap = wins_cap ? 2 * wins_cap : 1 << 14;
        wins = xrealloc(wins, wins_cap * sizeof *wins);
    }
    return nwins_used++;
}

/* ------------------------------------------------------------------ timers */

typedef struct {
    int64_t ts;
    uint32_t head, tail; /* FIFO of windows, creation order */
} TimerGroup;

static TimerGroup *groups; /* sorted by ts ascending, distinct ts */
static uint32_t ngroups, groups_cap;
static int64_t next_timer = INT64_MAX; /* groups[0].ts, or MAX if none */

static void timer_add(int64_t ts, uint32_t w)
{
    wins[w].next = NIL;
    /* Binary search for the first group with ts >= the new one; new times
     * are almost always the largest, so check the end first. */
    uint32_t lo = 0, hi = ngroups;
    if (ngroups > 0 && groups[ngroups - 1].ts < ts) {
        lo = ngroups;
    } else {
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (groups[mid].ts < ts)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    if (lo < ngroups && groups[lo].ts == ts) {
        wins[groups[lo].tail].next = w;
        groups[lo].tail = w;
        return;
    }
    if (ngroups == groups_cap) {
        groups_cap = groups_cap ? 2 * groups_cap : 16;
        groups = xrealloc(groups, groups_cap * sizeof *groups);
    }
    memmove(&groups[lo + 1], &groups[lo], (ngroups - lo) * sizeof *groups);
    groups[lo] = (TimerGroup){ts, w, w};
    ngroups++;
    next_timer = groups[0].ts;
}

static uint64_t fired;

/* Fires every timer group with ts <= wm, in ascending order. */
static void fire_until(int64_t wm)
{
    uint32_t g = 0;
    while (g < ngroups && groups[g].ts <= wm) {
        for (uint32_t w = groups[g].head; w != NIL;) {
            Window *win = &wins[w];
            const Key *k = &keys[win->key];
            char *p;
            if (out_len + k->esc_len + 64 <= OUT_CAP) {
                p = out_buf + out_len;
                memcpy(p, "{\"id\":\"", 7);
                p += 7;
                memcpy(p, key_arena + k->esc_off, k->esc_len);
                p += k->esc_len;
            } else { /* rare: flush, and write a huge id past the buffer */
                out_write("{\"id\":\"", 7);
                out_write(key_arena + k->esc_off, k->esc_len);
                if (out_len + 64 > OUT_CAP)
                    out_flush();
                p = out_buf + out_len;
            }
            memcpy(p, "\",\"ts\":", 7);
            p += 7;
            p = put_i64(p, win->first_ts);
            memcpy(p, ",\"vc\":", 6);
            p += 6;
            p = put_i64(p, map_take(w));
            *p++ = '}';
            *p++ = '\n';
            out_len = (size_t)(p - out_buf);

            uint32_t next = win->next;
            win->next = win_free;
            win_free = w;
            w = next;
            fired++;
        }
        g++;
    }
    if (g > 0) {
        memmove(groups, groups + g, (ngroups - g) * sizeof *groups);
        ngroups -= g;
    }
    next_timer = ngroups ? groups[0].ts : INT64_MAX;
}

/* ------------------------------------------------------------------ job */

static int64_t max_ts = INT64_MIN + OUT_OF_ORDERNESS + 1;
static int64_t watermark = INT64_MIN;
static uint64_t records, late, bad;

/* id points into the input buffer, which has at least 8 readable bytes
 * past the id (see load_w0). */
static inline void on_record(const char *id, uint32_t idlen, int64_t ts, int64_t vc)
{
    records++;
    /* Window operator, with the watermark as it was before this record. */
    int64_t m = ts % WINDOW_SIZE;
    if (m < 0)
        m += WINDOW_SIZE;
    int64_t start = ts - m;
    int64_t wmax = start + (WINDOW_SIZE - 1);
    if (wmax <= watermark) {
        late++;
    } else {
        uint64_t w0 = load_w0(id, idlen);
        uint32_t h = map_hash(w0, id, idlen, start);
        uint32_t i = h & map_mask;
        for (;;) {
            MapSlot *s = &map[i];
            if (s->win == NIL) {
                uint32_t w = win_alloc();
                wins[w] = (Window){start, ts, key_intern(id, idlen), h, NIL};
                *s = (MapSlot){start, vc, w0, idlen, w};
                timer_add(wmax, w);
                if (4 * ++map_count > 3 * (map_mask + 1u))
                    map_grow();
                break;
            }
            if (s->start == start && s->w0 == w0 && s->idlen == idlen &&
                (idlen <= 8 ||
                 memcmp(key_arena + keys[wins[s->win].key].off + 8, id + 8, idlen - 8) == 0)) {
                s->sum += vc;
                break;
            }
            i = (i + 1) & map_mask;
        }
    }
    /* Assigner: bounded out-of-orderness, periodic emit after every record. */
    if (ts > max_ts) {
        max_ts = ts;
        int64_t wm = max_ts - OUT_OF_ORDERNESS - 1;
        if (wm > watermark) {
            watermark = wm;
            if (wm >= next_timer)
                fire_until(wm);
        }
    }
}

/* Parses the complete lines in [p, end); end[-1] == '\n'. */
static void parse_lines(const char *p, const char *end)
{
    while (p < end) {
        const char *id = p;
        while (*p != ',' && *p != '\n')
            p++;
        if (*p != ',' || p == id)
            goto bad_line;
        uint32_t idlen = (uint32_t)(p - id);
        p++;

        int neg = 0;
        if (*p == '-') {
            neg = 1;
            p++;
        }
        if ((unsigned)(*p - '0') > 9)
            goto bad_line;
        uint64_t ts = 0;
        while ((unsigned)(*p - '0') <= 9)
            ts = ts * 10 + (uint64_t)(*p++ - '0');
        if (*p++ != ',')
            goto bad_line_rewind;

        if ((unsigned)(*p - '0') > 9)
            goto bad_line;
        int64_t vc = 0;
        while ((unsigned)(*p - '0') <= 9)
            vc = vc * 10 + (*p++ - '0');
        if (*p == '\r')
            p++;
        if (*p != '\n')
            goto bad_line;
        p++;
        on_record(id, idlen, neg ? (int64_t)(0 - ts) : (int64_t)ts, vc);
        continue;

    bad_line_rewind:
        p--;
    bad_line:
        bad++;
        while (*p != '\n')
            p++;
        p++;
    }
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: handwritten file.csv > out.jsonl\n", stderr);
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0)
        die(argv[1]);
    double t_start = now_s();

    key_table_grow();
    map_grow();

    /* buf holds [carry-over of an incomplete line][new chunk]; one spare byte
     * lets us terminate a final line that has no '\n', and 8 more keep
     * load_w0's over-read inside the allocation. */
    size_t cap = IN_CHUNK + 4096;
    char *buf = xrealloc(NULL, cap + 1 + 8);
    size_t have = 0;
    for (;;) {
        if (cap - have < IN_CHUNK / 2) {
            cap *= 2; /* a single line longer than the chunk */
            buf = xrealloc(buf, cap + 1 + 8);
        }
        ssize_t n = read(fd, buf + have, cap - have);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("handwritten: read");
        }
        if (n == 0)
            break;
        have += (size_t)n;
        size_t done = have;
        while (done > 0 && buf[done - 1] != '\n')
            done--;
        if (done == 0)
            continue;
        parse_lines(buf, buf + done);
        memmove(buf, buf + done, have - done);
        have -= done;
    }
    if (have > 0) {
        buf[have++] = '\n';
        parse_lines(buf, buf + have);
    }
    close(fd);
    free(buf);

    /* End of input: watermark MAX fires everything. */
    watermark = INT64_MAX;
    fire_until(INT64_MAX);
    out_flush();

    double dt = now_s() - t_start;
    fprintf(stderr,
            "handwritten: records %" PRIu64 " late %" PRIu64 " bad_lines %" PRIu64
            " windows %" PRIu64 " keys %" PRIu32 " time %.3f s rate %.2f M records/s\n",
            records, late, bad, fired, nkeys, dt, dt > 0 ? (double)records / dt / 1e6 : 0.0);
    return 0;
}
