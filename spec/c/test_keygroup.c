/* Key groups (base/wm_keygroup.h): Flink's KeyGroupRangeAssignment, worked by hand, and
 * key_by's routing by them (exec/wm_exchange.h). */
#include "test.h"

#include "base/wm_keygroup.h"
#include "exec/wm_exchange.h"

/* splitmix64's finalizer, written out here: wm_key_hash of an integer key */
static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

static void test_ranges_by_hand(void) {
  uint32_t a, b;
  /* 128 groups at parallelism 3: [ceil(i*128/3), floor(((i+1)*128-1)/3)] */
  wm_keygroup_range(0, 3, 128, &a, &b);
  CHECK_I64(a, 0);
  CHECK_I64(b, 42);
  wm_keygroup_range(1, 3, 128, &a, &b);
  CHECK_I64(a, 43);
  CHECK_I64(b, 85);
  wm_keygroup_range(2, 3, 128, &a, &b);
  CHECK_I64(a, 86);
  CHECK_I64(b, 127);
  /* and the owner of a group: g * 3 / 128 */
  CHECK_I64(wm_keygroup_instance(42, 3, 128), 0); /* 126 / 128 */
  CHECK_I64(wm_keygroup_instance(43, 3, 128), 1); /* 129 / 128 */
  CHECK_I64(wm_keygroup_instance(85, 3, 128), 1); /* 255 / 128 */
  CHECK_I64(wm_keygroup_instance(86, 3, 128), 2); /* 258 / 128 */
  /* 128 at 2: halves */
  wm_keygroup_range(0, 2, 128, &a, &b);
  CHECK_I64(a, 0);
  CHECK_I64(b, 63);
  wm_keygroup_range(1, 2, 128, &a, &b);
  CHECK_I64(a, 64);
  CHECK_I64(b, 127);
  /* 10 groups at 4: [0,2] [3,4] [5,7] [8,9] (ranges differ in size by at most one) */
  static const uint32_t want[4][2] = {{0, 2}, {3, 4}, {5, 7}, {8, 9}};
  for (int i = 0; i < 4; i++) {
    wm_keygroup_range(i, 4, 10, &a, &b);
    CHECK_I64(a, want[i][0]);
    CHECK_I64(b, want[i][1]);
  }
  /* one instance owns everything; as many instances as groups own one each */
  wm_keygroup_range(0, 1, 128, &a, &b);
  CHECK_I64(a, 0);
  CHECK_I64(b, 127);
  wm_keygroup_range(77, 128, 128, &a, &b);
  CHECK_I64(a, 77);
  CHECK_I64(b, 77);
}

/* For every m up to 300 and every p <= m: the ranges cover 0..m-1 in order, each non-empty,
 * and the owner of every group is the instance whose range holds it. */
static void test_ranges_partition(void) {
  int bad = 0;
  for (uint32_t m = 1; m <= 300; m++)
    for (int p = 1; p <= (int)m; p++) {
      uint32_t next = 0;
      for (int i = 0; i < p; i++) {
        uint32_t a, b;
        wm_keygroup_range(i, p, m, &a, &b);
        if (a != next || b < a) bad++;
        for (uint32_t g = a; g <= b; g++)
          if (wm_keygroup_instance(g, p, m) != i) bad++;
        next = b + 1;
      }
      if (next != m) bad++;
    }
  CHECK_I64(bad, 0);
  /* the largest: 32768 groups, no overflow */
  uint32_t a, b;
  wm_keygroup_range(32767, 32768, 32768, &a, &b);
  CHECK_I64(a, 32767);
  CHECK_I64(b, 32767);
  CHECK_I64(wm_keygroup_instance(32767, 1000, 32768), 999);
}

/* key_by routes a key to the owner of its group: the group is the key's hash modulo m */
static void test_route(void) {
  for (int64_t k = -5; k < 200; k++) {
    wm_value v = wm_int(k);
    uint32_t g = (uint32_t)(mix((uint64_t)k) % 128u);
    CHECK_I64(wm_keygroup_of(&v, 128), g);
    CHECK_I64(wm_exchange_route(&v, 3, 128), (int64_t)g * 3 / 128);
    CHECK_I64(wm_exchange_route(&v, 1, 128), 0);
    CHECK_I64(wm_exchange_route(&v, 2, 16), (int64_t)(mix((uint64_t)k) % 16u) * 2 / 16);
  }
  /* key 7, worked out apart (python3): mix(7) = 0x12ae30237b17df14, whose low 7 bits are
   * 0x14 = 20: group 20 of 128, owned by instance 20 * 3 / 128 = 0 of 3, 20 * 8 / 128 = 1
   * of 8 */
  wm_value seven = wm_int(7);
  CHECK(mix(7) == 0x12ae30237b17df14ULL);
  CHECK_I64(wm_keygroup_of(&seven, 128), 20);
  CHECK_I64(wm_exchange_route(&seven, 3, 128), 0);
  CHECK_I64(wm_exchange_route(&seven, 8, 128), 1);
  /* a string key: the same group on every call (a stable hash), and its route follows it */
  wm_value s = wm_cstr("k17", 3);
  uint32_t g = wm_keygroup_of(&s, 128);
  CHECK_I64(wm_keygroup_of(&s, 128), g);
  CHECK_I64(wm_exchange_route(&s, 3, 128), (int64_t)g * 3 / 128);
}

void test_keygroup(void) {
  test_ranges_by_hand();
  test_ranges_partition();
  test_route();
}
