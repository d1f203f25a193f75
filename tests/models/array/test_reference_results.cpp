// The PE-level reference computes real products: every tile's C equals a naive matmul.
#include <gtest/gtest.h>

#include <random>

#include "array_test_util.h"

namespace tessera::array {
namespace {
using namespace testing;

struct ArrayCase {
  ArrayDims dims;
  int sequences;  // random sequences per dataflow and buffering mode
};

TEST(PeReferenceResults, RandomTilesMatchNaiveMatmul) {
  const ArrayCase cases[] = {{{4, 4}, 12}, {{8, 8}, 8}, {{5, 7}, 8}, {{7, 5}, 8},
                             {{16, 16}, 3}, {{32, 32}, 1}, {{1, 1}, 6}, {{1, 6}, 6}};
  std::mt19937_64 rng(2024);
  int checked = 0;
  for (const ArrayCase& ac : cases) {
    for (Dataflow df : kAllDataflows) {
      for (bool db : {false, true}) {
        const PeArrayReference ref(df, ac.dims, db);
        for (int s = 0; s < ac.sequences; ++s) {
          const int count = std::uniform_int_distribution<int>(1, 4)(rng);
          std::vector<ReferenceTile> tiles;
          for (int t = 0; t < count; ++t) {
            tiles.push_back(make_tile(rng, random_shape(rng, df, ac.dims, 40)));
          }
          const ReferenceRun run = ref.run(tiles);
          ASSERT_EQ(run.tiles.size(), tiles.size());
          for (std::size_t t = 0; t < tiles.size(); ++t) {
            const GemmTile& g = tiles[t].shape;
            EXPECT_EQ(run.tiles[t].c, naive_matmul(tiles[t].a, tiles[t].b, g.m, g.k, g.n))
                << label(df, ac.dims, db) << " tile " << t << " " << shape_str(g);
            EXPECT_EQ(run.tiles[t].macs, g.m * g.k * g.n);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(PeReferenceResults, FullTilesOnLargestArray) {
  // Full 32x32 stationary tiles with int16-range operands (sums still fit in 32 bits).
  std::mt19937_64 rng(7);
  const ArrayDims dims{32, 32};
  for (Dataflow df : kAllDataflows) {
    const PeArrayReference ref(df, dims, true);
    std::vector<ReferenceTile> tiles;
    for (int t = 0; t < 2; ++t) {
      ReferenceTile tile;
      tile.shape = {32, 32, 32};
      tile.a = random_matrix(rng, 32, 32, -32768, 32767);
      tile.b = random_matrix(rng, 32, 32, -1000, 1000);
      tiles.push_back(tile);
    }
    const ReferenceRun run = ref.run(tiles);
    for (std::size_t t = 0; t < tiles.size(); ++t) {
      EXPECT_EQ(run.tiles[t].c, naive_matmul(tiles[t].a, tiles[t].b, 32, 32, 32))
          << dataflow_name(df) << " tile " << t;
    }
  }
}

TEST(PeReferenceResults, KSplitTilesAccumulateToTheFullProduct) {
  // A GEMM split along k into tiles: the per-tile products sum to the full product,
  // as the accumulators would add them.
  std::mt19937_64 rng(11);
  const ArrayDims dims{4, 4};
  const int64_t m = 4, k = 10, n = 4;
  const std::vector<int32_t> a = random_matrix(rng, m, k), b = random_matrix(rng, k, n);
  const std::vector<int32_t> full = naive_matmul(a, b, m, k, n);
  for (Dataflow df : kAllDataflows) {
    for (bool db : {false, true}) {
      std::vector<ReferenceTile> tiles;
      for (int64_t k0 = 0; k0 < k; k0 += 4) {
        const int64_t kk = std::min<int64_t>(4, k - k0);
        ReferenceTile t;
        t.shape = {m, kk, n};
        for (int64_t i = 0; i < m; ++i)
          for (int64_t p = 0; p < kk; ++p) t.a.push_back(a[i * k + k0 + p]);
        for (int64_t p = 0; p < kk; ++p)
          for (int64_t j = 0; j < n; ++j) t.b.push_back(b[(k0 + p) * n + j]);
        tiles.push_back(t);
      }
      const ReferenceRun run = PeArrayReference(df, dims, db).run(tiles);
      std::vector<int32_t> sum(m * n, 0);
      for (const auto& r : run.tiles)
        for (std::size_t x = 0; x < sum.size(); ++x) sum[x] += r.c[x];
      EXPECT_EQ(sum, full) << label(df, dims, db);
    }
  }
}

TEST(PeReferenceResults, RejectsTilesThatDoNotFit) {
  std::mt19937_64 rng(1);
  const PeArrayReference ws(Dataflow::kWeightStationary, {4, 4}, true);
  const std::vector<ReferenceTile> too_deep = {make_tile(rng, {3, 5, 4})};
  EXPECT_THROW(ws.run(too_deep), std::invalid_argument);
  const PeArrayReference os(Dataflow::kOutputStationary, {4, 4}, true);
  const std::vector<ReferenceTile> too_tall = {make_tile(rng, {5, 2, 4})};
  EXPECT_THROW(os.run(too_tall), std::invalid_argument);
  const PeArrayReference is(Dataflow::kInputStationary, {4, 4}, true);
  const std::vector<ReferenceTile> too_wide = {make_tile(rng, {5, 2, 4})};
  EXPECT_THROW(is.run(too_wide), std::invalid_argument);
}

}  // namespace
}  // namespace tessera::array
