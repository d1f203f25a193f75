// Module-owned statistics: counters registered with name, unit and description are
// found by walking the sc_object tree, wherever the module sits.
#include <gtest/gtest.h>

#include <systemc>

#include "models/common/interval_log.h"
#include "models/common/stats.h"

namespace tessera::models {
namespace {

struct Leaf : sc_core::sc_module, StatProvider {
  int64_t bytes = 0;
  explicit Leaf(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    stats_.add("bytes", "bytes", "bytes moved", [this] { return bytes; });
  }
};

struct Middle : sc_core::sc_module {  // counts nothing itself
  Leaf leaf{"leaf"};
  explicit Middle(sc_core::sc_module_name name) : sc_core::sc_module(name) {}
};

struct Top : sc_core::sc_module, StatProvider {
  int64_t cycles = 0;
  Leaf direct{"direct"};
  Middle middle{"middle"};
  explicit Top(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    stats_.add("cycles", "cycles", "cycles busy", [this] { return cycles; });
  }
};

TEST(Stats, CollectedFromEveryProviderInTheTree) {
  Top top("top");
  top.cycles = 40;
  top.direct.bytes = 7;
  top.middle.leaf.bytes = 1024;
  const std::vector<StatValue> v = collect_stats(top);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].path, "top.cycles");
  EXPECT_EQ(v[0].unit, "cycles");
  EXPECT_EQ(v[0].value, 40);
  EXPECT_EQ(v[1].path, "top.direct.bytes");
  EXPECT_EQ(v[1].value, 7);
  EXPECT_EQ(v[2].path, "top.middle.leaf.bytes");
  EXPECT_EQ(v[2].unit, "bytes");
  EXPECT_EQ(v[2].description, "bytes moved");
  EXPECT_EQ(v[2].value, 1024);
}

TEST(Stats, ANewCounterNeedsOnlyItsRegistration) {
  int64_t retries = 5;
  // What a module adds in its constructor; the collector needs no change.
  struct Retrying : Leaf {
    int64_t* retries;
    Retrying(sc_core::sc_module_name n, int64_t* r) : Leaf(n), retries(r) {
      stats_.add("retries", "requests", "requests sent again", [this] { return *retries; });
    }
  } extra("extra", &retries);
  const std::vector<StatValue> v = collect_stats(extra);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].path, "extra.retries");
  EXPECT_EQ(v[1].unit, "requests");
  EXPECT_EQ(v[1].value, 5);
  retries = 6;  // read at collection time
  EXPECT_EQ(collect_stats(extra)[1].value, 6);
}

TEST(Stats, KindNamesAreDeclaredWithTheKinds) {
  enum Kind : int32_t { kA = 0, kB };
  constexpr KindNames<Kind, 2> names = {{{kA, "a"}, {kB, "b"}}};
  static_assert(kind_name(names, kB) == "b");
  EXPECT_EQ(kind_name(names, 0), "a");
  EXPECT_EQ(kind_name(names, 7), "?");
}

// Coalescing keeps the totals of every interval and stores a run of adjacent intervals with
// equal keys as one, with the first one's fields; a gap or another key starts a new one.
TEST(Stats, IntervalLogCoalescesAdjacentIntervalsWithEqualKeys) {
  IntervalLog log;
  log.coalesce_by([](const Interval& i) { return static_cast<int64_t>(i.layer); });
  log.add(0, 10, 1, 0, 100);
  log.add(10, 15, 2, 0, 101);   // adjacent, same key: lengthens the first
  log.add(15, 15, 3, 1, 102);   // empty: ignored
  log.add(15, 20, 3, 1, 103);   // another key
  log.add(25, 30, 3, 1, 104);   // same key after a gap
  log.add(30, 31, 4, 1, 105);   // adjacent, same key
  ASSERT_EQ(log.intervals().size(), 3u);
  EXPECT_EQ(log.intervals()[0].begin, 0);
  EXPECT_EQ(log.intervals()[0].end, 15);
  EXPECT_EQ(log.intervals()[0].kind, 1);
  EXPECT_EQ(log.intervals()[0].instruction, 100);
  EXPECT_EQ(log.intervals()[1].begin, 15);
  EXPECT_EQ(log.intervals()[1].end, 20);
  EXPECT_EQ(log.intervals()[2].begin, 25);
  EXPECT_EQ(log.intervals()[2].end, 31);
  EXPECT_EQ(log.intervals()[2].instruction, 104);
  EXPECT_EQ(log.count(), 5);
  EXPECT_EQ(log.busy(), 10 + 5 + 5 + 5 + 1);
  EXPECT_EQ(log.total(1), 10);
  EXPECT_EQ(log.total(2), 5);
  EXPECT_EQ(log.total(3), 10);
  EXPECT_EQ(log.total(4), 1);

  IntervalLog plain;  // without a key every interval is stored
  plain.add(0, 10, 1, 0);
  plain.add(10, 15, 1, 0);
  EXPECT_EQ(plain.intervals().size(), 2u);
}

}  // namespace
}  // namespace tessera::models
