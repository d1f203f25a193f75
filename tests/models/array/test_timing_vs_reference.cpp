// The fast tile model gives exactly the PE-level reference's cycle counts, and its start
// times are the earliest the reference can execute without a hazard.
#include <gtest/gtest.h>

#include <random>

#include "array_test_util.h"

namespace tessera::array {
namespace {
using namespace testing;

void expect_same_schedule(const TileSchedule& fast, const TileSchedule& ref,
                          const std::string& what) {
  EXPECT_EQ(fast.preload_start, ref.preload_start) << what;
  EXPECT_EQ(fast.preload_end, ref.preload_end) << what;
  EXPECT_EQ(fast.stream_start, ref.stream_start) << what;
  EXPECT_EQ(fast.stream_end, ref.stream_end) << what;
  EXPECT_EQ(fast.done, ref.done) << what;
}

// Every tile shape that fits, with the streamed dimension 1..rows+cols+3.
std::vector<GemmTile> all_shapes(Dataflow df, ArrayDims d) {
  std::vector<GemmTile> out;
  const GemmTile hi = shape_limits(df, d, d.rows + d.cols + 3);
  for (int64_t m = 1; m <= hi.m; ++m) {
    for (int64_t k = 1; k <= hi.k; ++k) {
      for (int64_t n = 1; n <= hi.n; ++n) {
        const GemmTile t{m, k, n};
        if (tile_fits(df, d, t)) out.push_back(t);
      }
    }
  }
  return out;
}

const ArrayDims kSmallArrays[] = {{1, 1}, {1, 4}, {4, 1}, {2, 3}, {3, 5}, {4, 4}, {6, 3}};

TEST(FastModelVsReference, EveryLoneTileOnSmallArrays) {
  std::mt19937_64 rng(99);
  int checked = 0;
  for (ArrayDims dims : kSmallArrays) {
    for (Dataflow df : kAllDataflows) {
      for (bool db : {false, true}) {
        const PeArrayReference ref(df, dims, db);
        for (const GemmTile& g : all_shapes(df, dims)) {
          const std::vector<ReferenceTile> tiles = {make_tile(rng, g)};
          const ReferenceRun run = ref.run(tiles);
          const std::string what = label(df, dims, db) + " " + shape_str(g);
          ASSERT_EQ(tile_timing(df, dims, g).total(), run.total_cycles) << what;
          const GemmTile one[] = {g};
          EXPECT_EQ(sequence_cycles(df, dims, db, one), run.total_cycles) << what;
          expect_same_schedule(fast_schedule(df, dims, db, tiles)[0], run.tiles[0].schedule,
                               what);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 2000);
}

TEST(FastModelVsReference, RandomLoneTilesOnLargerArrays) {
  std::mt19937_64 rng(5);
  const ArrayDims arrays[] = {{8, 8}, {5, 7}, {7, 5}, {16, 16}, {32, 32}};
  for (ArrayDims dims : arrays) {
    for (Dataflow df : kAllDataflows) {
      for (bool db : {false, true}) {
        const PeArrayReference ref(df, dims, db);
        const int count = dims.rows >= 16 ? 4 : 20;
        for (int s = 0; s < count; ++s) {
          const GemmTile g = random_shape(rng, df, dims, 2 * (dims.rows + dims.cols));
          const std::vector<ReferenceTile> tiles = {make_tile(rng, g)};
          EXPECT_EQ(tile_timing(df, dims, g).total(), ref.run(tiles).total_cycles)
              << label(df, dims, db) << " " << shape_str(g);
        }
      }
    }
  }
}

// Sequences of 2..6 tiles of varying shapes with all operands ready at cycle 0.
TEST(FastModelVsReference, RandomSequencesReadyAtZero) {
  std::mt19937_64 rng(123);
  const ArrayDims arrays[] = {{1, 1}, {2, 2}, {4, 4}, {3, 5}, {5, 3}, {8, 8}, {16, 16}};
  int checked = 0;
  for (ArrayDims dims : arrays) {
    for (Dataflow df : kAllDataflows) {
      for (bool db : {false, true}) {
        const PeArrayReference ref(df, dims, db);
        const int count = dims.rows >= 16 ? 4 : 30;
        for (int s = 0; s < count; ++s) {
          const int len = std::uniform_int_distribution<int>(2, 6)(rng);
          std::vector<ReferenceTile> tiles;
          std::vector<GemmTile> shapes;
          for (int t = 0; t < len; ++t) {
            shapes.push_back(random_shape(rng, df, dims, dims.rows + dims.cols + 2));
            tiles.push_back(make_tile(rng, shapes.back()));
          }
          const ReferenceRun run = ref.run(tiles);
          const std::vector<TileSchedule> fast = fast_schedule(df, dims, db, tiles);
          std::string what = label(df, dims, db) + " seq";
          for (const auto& g : shapes) what += " " + shape_str(g);
          ASSERT_EQ(sequence_cycles(df, dims, db, shapes), run.total_cycles) << what;
          for (int t = 0; t < len; ++t) {
            expect_same_schedule(fast[t], run.tiles[t].schedule,
                                 what + " tile " + std::to_string(t));
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// Late stationary / streamed operands and stretched streams: the whole schedule matches.
TEST(FastModelVsReference, RandomSequencesWithReadyTimesAndStretch) {
  std::mt19937_64 rng(321);
  const ArrayDims arrays[] = {{1, 3}, {4, 4}, {3, 5}, {6, 6}};
  for (ArrayDims dims : arrays) {
    for (Dataflow df : kAllDataflows) {
      for (bool db : {false, true}) {
        const PeArrayReference ref(df, dims, db);
        for (int s = 0; s < 40; ++s) {
          const int len = std::uniform_int_distribution<int>(2, 6)(rng);
          std::vector<ReferenceTile> tiles;
          int64_t clock = 0;
          for (int t = 0; t < len; ++t) {
            ReferenceTile tile = make_tile(rng, random_shape(rng, df, dims, 12));
            std::uniform_int_distribution<int64_t> jitter(0, 25);
            clock += jitter(rng) / 2;
            if (rng() % 2) tile.stationary_ready = clock + jitter(rng);
            if (rng() % 2) tile.stream_ready = clock + jitter(rng);
            if (rng() % 3 == 0) tile.min_stream_cycles = jitter(rng);
            tiles.push_back(tile);
          }
          const ReferenceRun run = ref.run(tiles);
          const std::vector<TileSchedule> fast = fast_schedule(df, dims, db, tiles);
          for (int t = 0; t < len; ++t) {
            expect_same_schedule(fast[t], run.tiles[t].schedule,
                                 label(df, dims, db) + " seed-seq " + std::to_string(s) +
                                     " tile " + std::to_string(t) + " " +
                                     shape_str(tiles[t].shape));
            const GemmTile& g = tiles[t].shape;
            EXPECT_EQ(run.tiles[t].c, naive_matmul(tiles[t].a, tiles[t].b, g.m, g.k, g.n));
          }
        }
      }
    }
  }
}

// The fast model's schedule replayed on the reference runs clean, and starting any
// hardware-bound phase one cycle earlier makes the reference report a hazard: the rules
// are the earliest legal starts, not merely safe ones.
TEST(FastModelVsReference, ScheduleIsTight) {
  std::mt19937_64 rng(77);
  const ArrayDims arrays[] = {{1, 1}, {2, 3}, {4, 4}, {5, 3}};
  int decremented = 0;
  for (ArrayDims dims : arrays) {
    for (Dataflow df : kAllDataflows) {
      for (bool db : {false, true}) {
        const PeArrayReference ref(df, dims, db);
        for (int s = 0; s < 25; ++s) {
          const int len = std::uniform_int_distribution<int>(1, 5)(rng);
          std::vector<ReferenceTile> tiles;
          for (int t = 0; t < len; ++t) {
            tiles.push_back(make_tile(rng, random_shape(rng, df, dims, dims.rows + dims.cols + 2)));
          }
          const std::vector<TileSchedule> fast = fast_schedule(df, dims, db, tiles);
          const ReferenceRun replay = ref.run_with_schedule(tiles, fast);
          for (int t = 0; t < len; ++t) {
            EXPECT_EQ(replay.tiles[t].schedule.done, fast[t].done);
          }
          const std::string what = label(df, dims, db) + " seq " + std::to_string(s);
          for (int t = 0; t < len; ++t) {
            if (df != Dataflow::kOutputStationary && fast[t].preload_start > 0) {
              std::vector<TileSchedule> early = fast;
              --early[t].preload_start;
              EXPECT_THROW(ref.run_with_schedule(tiles, early), ReferenceHazard)
                  << what << ": preload of tile " << t << " one cycle early";
              ++decremented;
            }
            if (fast[t].stream_start > 0) {
              std::vector<TileSchedule> early = fast;
              --early[t].stream_start;
              EXPECT_THROW(ref.run_with_schedule(tiles, early), ReferenceHazard)
                  << what << ": stream of tile " << t << " one cycle early";
              ++decremented;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(decremented, 500);
}

}  // namespace
}  // namespace tessera::array
