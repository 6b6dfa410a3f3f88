/*
 * gen.c - deterministic generator of benchmark input for wmrun.
 *
 * Writes CSV lines "id,ts_ms,vc" to stdout, e.g. "k000042,1700000000123,57".
 *
 *   -n N     number of records              (default 10000000)
 *   -k K     number of distinct keys        (default 10000)
 *   -r R     records per ms of event time   (default 200)
 *   -d D     max out-of-orderness in ms     (default 1500)
 *   -s SEED  PRNG seed                      (default 42)
 *   -t T0    first timestamp in ms          (default 1700000000000)
 *
 * Record i (0-based) gets ts = T0 + i/R - delay, delay uniform in [0, D],
 * clamped so that ts >= T0. With D < 2000 no record is ever late for a
 * watermark of bounded out-of-orderness 2000 ms (the watermark after record
 * i-1 is at most T0 + (i-1)/R - 2001, record i is at least T0 + i/R - D).
 * The key is uniform in [0, K), vc uniform in [1, 100].
 *
 * The output depends only on the options (splitmix64 PRNG, no floating
 * point), so the same command line always gives the same bytes.
 * Lines are formatted by hand into a large buffer: printf per line would
 * dominate the run time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_CAP (1u << 20)       /* bytes per write(2) */
#define LINE_MAX_BYTES 96        /* "k" + 20 digits + "," + 20 + "," + 3 + "\n" fits */

static char out_buf[OUT_CAP + LINE_MAX_BYTES];
static size_t out_len;

static void flush_out(void)
{
    size_t off = 0;
    while (off < out_len) {
        ssize_t w = write(STDOUT_FILENO, out_buf + off, out_len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            perror("gen: write");
            exit(1);
        }
        off += (size_t)w;
    }
    out_len = 0;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n): for the small n used here the modulo bias
 * (< n / 2^64) is irrelevant. */
static uint64_t below(uint64_t *state, uint64_t n)
{
    return splitmix64(state) % n;
}

/* Writes the decimal digits of v at p, left padded with zeros to at least
 * `width` digits; returns the end. */
static char *put_u64(char *p, uint64_t v, int width)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n < width)
        tmp[n++] = '0';
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

static char *put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (uint64_t)0 - (uint64_t)v, 1);
    }
    return put_u64(p, (uint64_t)v, 1);
}

static int64_t parse_int(const char *opt, const char *s, int64_t min)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min) {
        fprintf(stderr, "gen: bad value for %s: '%s' (integer >= %" PRId64 " expected)\n",
                opt, s, min);
        exit(2);
    }
    return (int64_t)v;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: gen [-n records] [-k keys] [-r records_per_ms] [-d max_delay_ms]\n"
            "           [-s seed] [-t start_ts_ms] > file.csv\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int64_t n = 10000000, k = 10000, r = 200, d = 1500, seed = 42;
    int64_t t0 = 1700000000000LL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0' || a[2] != '\0' || i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        switch (a[1]) {
        case 'n': n = parse_int(a, v, 0); break;
        case 'k': k = parse_int(a, v, 1); break;
        case 'r': r = parse_int(a, v, 1); break;
        case 'd': d = parse_int(a, v, 0); break;
        case 's': seed = parse_int(a, v, INT64_MIN); break;
        case 't': t0 = parse_int(a, v, INT64_MIN / 2); break;
        default: usage();
        }
    }
    if (d >= 2000)
        fprintf(stderr, "gen: warning: -d %" PRId64 " >= 2000: some records may be late "
                        "for a 2 s bounded-out-of-orderness watermark\n", d);

    uint64_t st = (uint64_t)seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t key = below(&st, (uint64_t)k);
        int64_t delay = (int64_t)below(&st, (uint64_t)d + 1);
        int64_t vc = 1 + (int64_t)below(&st, 100);
        int64_t ts = t0 + i / r - delay;
        if (ts < t0)
            ts = t0;

        char *p = out_buf + out_len;
        *p++ = 'k';
        p = put_u64(p, key, 6);
        *p++ = ',';
        p = put_i64(p, ts);
        *p++ = ',';
        p = put_u64(p, (uint64_t)vc, 1);
        *p++ = '\n';
        out_len = (size_t)(p - out_buf);
        if (out_len >= OUT_CAP)
            flush_out();
    }
    flush_out();
    return 0;
}
