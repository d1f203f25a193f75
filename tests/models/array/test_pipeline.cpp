// ArrayPipeline behaviour with hand-computed schedules, each confirmed on the reference.
#include <gtest/gtest.h>

#include <random>

#include "array_test_util.h"

namespace tessera::array {
namespace {
using namespace testing;

struct Issue {
  GemmTile tile;
  int64_t stationary_ready = 0, stream_ready = 0, min_stream = 0;
};

// Issues the tiles on the fast model, checks each schedule against `expected`, then runs the
// same tiles (with the same ready times and stretch) on the reference and checks it too.
void check(Dataflow df, ArrayDims dims, bool db, const std::vector<Issue>& issues,
           const std::vector<TileSchedule>& expected) {
  std::mt19937_64 rng(42);
  ArrayPipeline pipe(df, dims, db);
  std::vector<ReferenceTile> tiles;
  for (std::size_t t = 0; t < issues.size(); ++t) {
    const Issue& is = issues[t];
    const TileSchedule s = pipe.issue(is.tile, is.stationary_ready, is.stream_ready, is.min_stream);
    const std::string what = label(df, dims, db) + " tile " + std::to_string(t);
    EXPECT_EQ(s.preload_start, expected[t].preload_start) << what;
    EXPECT_EQ(s.preload_end, expected[t].preload_end) << what;
    EXPECT_EQ(s.stream_start, expected[t].stream_start) << what;
    EXPECT_EQ(s.stream_end, expected[t].stream_end) << what;
    EXPECT_EQ(s.done, expected[t].done) << what;
    ReferenceTile rt = make_tile(rng, is.tile);
    rt.stationary_ready = is.stationary_ready;
    rt.stream_ready = is.stream_ready;
    rt.min_stream_cycles = is.min_stream;
    tiles.push_back(rt);
  }
  const ReferenceRun run = PeArrayReference(df, dims, db).run(tiles);
  int64_t latest = 0;
  for (std::size_t t = 0; t < tiles.size(); ++t) {
    const TileSchedule& r = run.tiles[t].schedule;
    const std::string what = "reference " + label(df, dims, db) + " tile " + std::to_string(t);
    EXPECT_EQ(r.preload_start, expected[t].preload_start) << what;
    EXPECT_EQ(r.preload_end, expected[t].preload_end) << what;
    EXPECT_EQ(r.stream_start, expected[t].stream_start) << what;
    EXPECT_EQ(r.stream_end, expected[t].stream_end) << what;
    EXPECT_EQ(r.done, expected[t].done) << what;
    latest = std::max(latest, expected[t].done);
  }
  EXPECT_EQ(pipe.last_done(), latest);
  EXPECT_EQ(run.total_cycles, latest);
}

const ArrayDims k4x4{4, 4};
const GemmTile kFull{4, 4, 4};

TEST(ArrayPipeline, LateStationaryOperandDelaysTheLoad) {
  // ws 4x4 db: weights arrive at 10: load 10..14, stream 14..18, done 18+7 = 25.
  // The second tile's load waits for the first's switch at 14: load 14..18, stream 18..22,
  // done 29.
  check(Dataflow::kWeightStationary, k4x4, true, {{kFull, 10, 0}, {kFull, 0, 0}},
        {{10, 14, 14, 18, 25}, {14, 18, 18, 22, 29}});
  // Weights of the second tile arrive at 30, long after the array is free: load 30..34,
  // stream 34..38, done 45 (is: same machine, stream = n = 4, drain 4+4-1 = 7).
  check(Dataflow::kInputStationary, k4x4, false, {{kFull, 0, 0}, {kFull, 30, 0}},
        {{0, 4, 4, 8, 15}, {30, 34, 34, 38, 45}});
}

TEST(ArrayPipeline, LateStreamedOperandDelaysTheStream) {
  // ws 4x4 db: inputs dispatched at 20: load 0..4, stream 20..24, done 31. The second
  // tile's weights stay out of the shadow until the first tile's switch at 20: load
  // 20..24, stream 24..28, done 35.
  check(Dataflow::kWeightStationary, k4x4, true, {{kFull, 0, 20}, {kFull, 0, 0}},
        {{0, 4, 20, 24, 31}, {20, 24, 24, 28, 35}});
  // Single buffered: the second load trails the first tile's last operand (PE(0,0) in
  // cycle 23): load 23..27, stream 27..31, done 38.
  check(Dataflow::kWeightStationary, k4x4, false, {{kFull, 0, 20}, {kFull, 0, 0}},
        {{0, 4, 20, 24, 31}, {23, 27, 27, 31, 38}});
  // os 4x4: the weights' arrival (stationary_ready) gates the stream like stream_ready:
  // stream 9..13, done 13 + (4+4+4-2) = 23.
  check(Dataflow::kOutputStationary, k4x4, true, {{kFull, 9, 3}},
        {{9, 9, 9, 13, 23}});
}

TEST(ArrayPipeline, MinStreamCyclesStretchesStreamEndAndDone) {
  // ws 4x4 m=4: natural stream 4..8, done 15. With min_stream 10: stream 4..14, done 21:
  // both later by 10 - 4 = 6.
  check(Dataflow::kWeightStationary, k4x4, true, {{kFull, 0, 0, 0}}, {{0, 4, 4, 8, 15}});
  check(Dataflow::kWeightStationary, k4x4, true, {{kFull, 0, 0, 10}}, {{0, 4, 4, 14, 21}});
  // A bound below the natural stream changes nothing.
  check(Dataflow::kWeightStationary, k4x4, true, {{kFull, 0, 0, 3}}, {{0, 4, 4, 8, 15}});
  // os 4x4 k=3, m=n=4: natural 0..3, done 3+10 = 13; min_stream 7: 0..7, done 17.
  check(Dataflow::kOutputStationary, k4x4, false, {{{4, 3, 4}, 0, 0, 7}}, {{0, 0, 0, 7, 17}});
  // is 4x4 n=2, m=4: stretched to 5: stream 4..9, done 9+7 = 16; the next tile follows
  // the stretched window: its load 4..8 (db), stream 9..11, done 18.
  check(Dataflow::kInputStationary, k4x4, true, {{{4, 4, 2}, 0, 0, 5}, {{4, 4, 2}, 0, 0, 0}},
        {{0, 4, 4, 9, 16}, {4, 8, 9, 11, 18}});
}

TEST(ArrayPipeline, DoubleBufferedShiftExposedWhenFewRows) {
  // ws 4x4 db, two tiles with m=2 < rows: t0 stream 4..6, done 13. t1's weights shift
  // 4..8 while t0 streams, but 4 cycles of shift > 2 rows: stream_start = preload_end = 8.
  check(Dataflow::kWeightStationary, k4x4, true, {{{2, 4, 4}}, {{2, 4, 4}}},
        {{0, 4, 4, 6, 13}, {4, 8, 8, 10, 17}});
  // With m = 4 = k the shift is fully hidden: t1 streams right after t0 (8..12).
  check(Dataflow::kWeightStationary, k4x4, true, {{{4, 4, 4}}, {{4, 4, 4}}},
        {{0, 4, 4, 8, 15}, {4, 8, 8, 12, 19}});
  // A shorter (k=2) next tile is hidden behind m=2: load 4..6, stream 6..8.
  check(Dataflow::kWeightStationary, k4x4, true, {{{2, 4, 4}}, {{2, 2, 4}}},
        {{0, 4, 4, 6, 13}, {4, 6, 6, 8, 15}});
}

TEST(ArrayPipeline, OutputStationaryDrainFrontier) {
  // os 4x4 db: t0 (m=4,k=2) 0..2, frontier F = 2+4 = 6. t1 (m=1,k=6,n=4) ends at 2+6 = 8
  // >= 6: no stall, 2..8, done 8+(4+1+4-2) = 15; F = max(6, 8+1) = 9. t2 (m=1,k=1,n=1)
  // must end at >= 9: stream 8..9, done 9+(4+1+1-2) = 13, before t1's done.
  check(Dataflow::kOutputStationary, k4x4, true, {{{4, 2, 4}}, {{1, 6, 4}}, {{1, 1, 1}}},
        {{0, 0, 0, 2, 12}, {2, 2, 2, 8, 15}, {8, 8, 8, 9, 13}});
  // A frontier from two tiles back: t0 (m=4,k=1) 0..1 -> F=5; t1 (m=1,k=1) needs end>=5:
  // 4..5 -> F = max(5, 6) = 6; t2 (m=1,k=1): end >= 6: 5..6.
  check(Dataflow::kOutputStationary, k4x4, true, {{{4, 1, 4}}, {{1, 1, 4}}, {{1, 1, 4}}},
        {{0, 0, 0, 1, 11}, {4, 4, 4, 5, 12}, {5, 5, 5, 6, 13}});
}

TEST(ArrayPipeline, RejectsBadTiles) {
  ArrayPipeline ws(Dataflow::kWeightStationary, k4x4, true);
  EXPECT_THROW(ws.issue({4, 5, 4}, 0, 0), std::invalid_argument);  // k > rows
  EXPECT_THROW(ws.issue({4, 4, 5}, 0, 0), std::invalid_argument);  // n > cols
  EXPECT_THROW(ws.issue({0, 4, 4}, 0, 0), std::invalid_argument);  // empty
  EXPECT_THROW(ws.issue({4, 4, 4}, 0, 0, -1), std::invalid_argument);
  EXPECT_THROW(tile_timing(Dataflow::kOutputStationary, k4x4, {5, 1, 1}), std::invalid_argument);
  EXPECT_THROW(ArrayPipeline(Dataflow::kWeightStationary, {0, 4}, true), std::invalid_argument);
  EXPECT_TRUE(tile_fits(Dataflow::kWeightStationary, k4x4, {1000, 4, 4}));
  EXPECT_TRUE(tile_fits(Dataflow::kOutputStationary, k4x4, {4, 1000, 4}));
  EXPECT_TRUE(tile_fits(Dataflow::kInputStationary, k4x4, {4, 4, 1000}));
  EXPECT_FALSE(tile_fits(Dataflow::kInputStationary, k4x4, {5, 4, 4}));
  EXPECT_FALSE(tile_fits(Dataflow::kOutputStationary, k4x4, {4, 4, 5}));
  EXPECT_EQ(sequence_cycles(Dataflow::kWeightStationary, k4x4, true, {}), 0);
}

TEST(ArrayPipeline, TpuV1FullTile) {
  // 256x256 ws, a full 256x256x256 tile: preload 256 (the TPU paper's 256-cycle shift),
  // stream 256, drain 256+256-1 = 511: 1023 cycles. With double buffering a stream of
  // 256-row tiles hides the next tile's shift completely: tile i streams at 256 + 256 i.
  const ArrayDims tpu{256, 256};
  EXPECT_EQ(tile_timing(Dataflow::kWeightStationary, tpu, {256, 256, 256}).total(), 1023);
  ArrayPipeline pipe(Dataflow::kWeightStationary, tpu, true);
  for (int i = 0; i < 4; ++i) {
    const TileSchedule s = pipe.issue({256, 256, 256}, 0, 0);
    EXPECT_EQ(s.stream_start, 256 + 256 * i);
  }
  EXPECT_EQ(pipe.last_done(), 256 + 4 * 256 + 511);
}

}  // namespace
}  // namespace tessera::array
