// Cycle counts derived by hand from the micro-architecture (docs/validation-array.md),
// checked against both the fast model and the PE-level reference.
#include <gtest/gtest.h>

#include <random>

#include "array_test_util.h"

namespace tessera::array {
namespace {
using namespace testing;

struct HandCase {
  Dataflow df;
  ArrayDims dims;
  GemmTile tile;
  int64_t preload, stream, drain, total;
};

// ws: preload k, stream m, drain R + n - 1 (the last row's partial sum for column n-1
//     crosses n-1 columns and R rows after entering, then one accumulator cycle).
// is: preload k, stream n, drain R + m - 1 (ws with A^T held and B's columns streaming).
// os: preload 0, stream k, drain R + m + n - 2 (PE(m-1,n-1) finishes m+n-2 cycles after
//     the last step enters; its column then shifts R rows down into the accumulators).
const HandCase kCases[] = {
    // ws 4x4, m=3,k=4,n=4: preload 4 + stream 3 + drain (4+4-1=7) = 14
    {Dataflow::kWeightStationary, {4, 4}, {3, 4, 4}, 4, 3, 7, 14},
    // ws 4x4, M=1,k=4,n=4: preload 4 + stream 1 + drain 7 = 12
    {Dataflow::kWeightStationary, {4, 4}, {1, 4, 4}, 4, 1, 7, 12},
    // ws 4x4, m=5,k=2,n=3 (partial tile): preload 2 + stream 5 + drain (4+3-1=6) = 13
    {Dataflow::kWeightStationary, {4, 4}, {5, 2, 3}, 2, 5, 6, 13},
    // ws 8x8, M=1,k=1,n=1: preload 1 + stream 1 + drain (8+1-1=8) = 10
    {Dataflow::kWeightStationary, {8, 8}, {1, 1, 1}, 1, 1, 8, 10},
    // is 4x4, m=3,k=4,n=5: preload 4 + stream 5 + drain (4+3-1=6) = 15
    {Dataflow::kInputStationary, {4, 4}, {3, 4, 5}, 4, 5, 6, 15},
    // is 4x4, M=1,k=2,n=3: preload 2 + stream 3 + drain (4+1-1=4) = 9
    {Dataflow::kInputStationary, {4, 4}, {1, 2, 3}, 2, 3, 4, 9},
    // is 4x4, m=4,k=4,n=1: preload 4 + stream 1 + drain (4+4-1=7) = 12
    {Dataflow::kInputStationary, {4, 4}, {4, 4, 1}, 4, 1, 7, 12},
    // is 5x7, m=7,k=5,n=2: preload 5 + stream 2 + drain (5+7-1=11) = 18
    {Dataflow::kInputStationary, {5, 7}, {7, 5, 2}, 5, 2, 11, 18},
    // os 4x4, m=4,n=4,k=4: stream 4 + drain (4+4+4-2=10) = 14 = 2R+C+T-2 (SCALE-Sim
    // paper); SCALE-Sim's code count R+C+T-2 = 10 stops at the last MAC, before the
    // results have been shifted out.
    {Dataflow::kOutputStationary, {4, 4}, {4, 4, 4}, 0, 4, 10, 14},
    // os 4x4, M=1,n=4,k=3: stream 3 + drain (4+1+4-2=7) = 10
    {Dataflow::kOutputStationary, {4, 4}, {1, 3, 4}, 0, 3, 7, 10},
    // os 4x4, m=2,n=3,k=5: stream 5 + drain (4+2+3-2=7) = 12
    {Dataflow::kOutputStationary, {4, 4}, {2, 5, 3}, 0, 5, 7, 12},
    // os 3x5, m=3,n=5,k=1: stream 1 + drain (3+3+5-2=9) = 10
    {Dataflow::kOutputStationary, {3, 5}, {3, 1, 5}, 0, 1, 9, 10},
};

TEST(HandCounts, LoneTiles) {
  std::mt19937_64 rng(3);
  for (const HandCase& hc : kCases) {
    const std::string what = std::string(dataflow_name(hc.df)) + " " + shape_str(hc.tile);
    const TileTiming t = tile_timing(hc.df, hc.dims, hc.tile);
    EXPECT_EQ(t.preload_cycles, hc.preload) << what;
    EXPECT_EQ(t.stream_cycles, hc.stream) << what;
    EXPECT_EQ(t.drain_cycles, hc.drain) << what;
    EXPECT_EQ(t.total(), hc.total) << what;
    for (bool db : {false, true}) {
      const std::vector<ReferenceTile> tiles = {make_tile(rng, hc.tile)};
      EXPECT_EQ(PeArrayReference(hc.df, hc.dims, db).run(tiles).total_cycles, hc.total) << what;
    }
  }
}

struct HandSequence {
  Dataflow df;
  bool db;
  std::vector<GemmTile> tiles;
  std::vector<TileSchedule> expected;
};

TEST(HandCounts, TwoTileSequences) {
  const HandSequence cases[] = {
      // ws 4x4, two (m=8,k=4,n=4) tiles, double buffered:
      //  t0: load 0..4, stream 4..12, done 12+7 = 19
      //  t1: load may start when t0's switch passes PE(0,0) at 4: load 4..8,
      //      stream waits for t0's window: 12..20, done 27
      {Dataflow::kWeightStationary, true, {{8, 4, 4}, {8, 4, 4}},
       {{0, 4, 4, 12, 19}, {4, 8, 12, 20, 27}}},
      // single buffered: t1's load trails t0's last operand, which is at PE(0,0) in
      // cycle 11: load 11..15, stream 15..23, done 30
      {Dataflow::kWeightStationary, false, {{8, 4, 4}, {8, 4, 4}},
       {{0, 4, 4, 12, 19}, {11, 15, 15, 23, 30}}},
      // is 4x4, two (m=4,k=4,n=2) tiles, double buffered: t0 stream 4..6, done 6+7 = 13;
      //  t1 load 4..8, the shift is exposed (n=2 < 4): stream 8..10, done 17
      {Dataflow::kInputStationary, true, {{4, 4, 2}, {4, 4, 2}},
       {{0, 4, 4, 6, 13}, {4, 8, 8, 10, 17}}},
      // single buffered: t1 load 5..9 (t0's last operand at PE(0,0) in cycle 5),
      //  stream 9..11, done 18
      {Dataflow::kInputStationary, false, {{4, 4, 2}, {4, 4, 2}},
       {{0, 4, 4, 6, 13}, {5, 9, 9, 11, 18}}},
      // os 4x4, two (m=4,k=2,n=4) tiles, double buffered: t0 stream 0..2, done 2+10 = 12;
      //  drain frontier F = 2+4 = 6: t1's stream must end at >= 6, so 4..6, done 16
      {Dataflow::kOutputStationary, true, {{4, 2, 4}, {4, 2, 4}},
       {{0, 0, 0, 2, 12}, {4, 4, 4, 6, 16}}},
      // single buffered: t1 may start at F-1 = 5 (its first MAC at PE(0,0) in the cycle
      //  t0's result leaves it): stream 5..7, done 17
      {Dataflow::kOutputStationary, false, {{4, 2, 4}, {4, 2, 4}},
       {{0, 0, 0, 2, 12}, {5, 5, 5, 7, 17}}},
  };
  std::mt19937_64 rng(4);
  for (const HandSequence& hs : cases) {
    const ArrayDims dims{4, 4};
    std::vector<ReferenceTile> tiles;
    for (const GemmTile& g : hs.tiles) tiles.push_back(make_tile(rng, g));
    const std::vector<TileSchedule> fast = fast_schedule(hs.df, dims, hs.db, tiles);
    const ReferenceRun run = PeArrayReference(hs.df, dims, hs.db).run(tiles);
    for (std::size_t t = 0; t < tiles.size(); ++t) {
      const std::string what = label(hs.df, dims, hs.db) + " tile " + std::to_string(t);
      for (const TileSchedule* s : {&fast[t], &run.tiles[t].schedule}) {
        EXPECT_EQ(s->preload_start, hs.expected[t].preload_start) << what;
        EXPECT_EQ(s->preload_end, hs.expected[t].preload_end) << what;
        EXPECT_EQ(s->stream_start, hs.expected[t].stream_start) << what;
        EXPECT_EQ(s->stream_end, hs.expected[t].stream_end) << what;
        EXPECT_EQ(s->done, hs.expected[t].done) << what;
      }
    }
    EXPECT_EQ(sequence_cycles(hs.df, dims, hs.db, hs.tiles), hs.expected.back().done);
  }
}

}  // namespace
}  // namespace tessera::array
