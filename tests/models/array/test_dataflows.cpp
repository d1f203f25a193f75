// The dataflow registry and what each registered DataflowModel answers: names, tile
// bounds, the compiler's largest tile and which operand's arrival gates what.
#include <gtest/gtest.h>

#include <stdexcept>

#include "array_test_util.h"

namespace tessera::array {
namespace {
using namespace testing;

TEST(Dataflows, RegisteredOnceInOrderWithRoundTrippingNames) {
  const std::vector<std::string_view> expected = {"ws", "os", "is"};
  EXPECT_EQ(dataflows().names(), expected);
  for (const auto& m : dataflows().all()) {
    EXPECT_EQ(parse_dataflow(m->name()), m->id());
    EXPECT_EQ(dataflow_name(m->id()), m->name());
    EXPECT_EQ(&dataflow_model(m->id()), m.get());
  }
  EXPECT_EQ(parse_dataflow("rs"), std::nullopt);
  DataflowRegistry r;
  add_builtin_dataflows(r);
  EXPECT_EQ(r.names(), expected);
  EXPECT_THROW(add_builtin_dataflows(r), std::logic_error);  // each id and name once
}

TEST(Dataflows, TileBoundsCapOnlyTheStationaryDimensions) {
  const ArrayDims d{4, 6};
  auto bounds = [&](Dataflow df) { return dataflow_model(df).tile_bounds(d); };
  const GemmTile ws = bounds(Dataflow::kWeightStationary), os = bounds(Dataflow::kOutputStationary),
                 is = bounds(Dataflow::kInputStationary);
  EXPECT_EQ(ws.m, kUnbounded);
  EXPECT_EQ(ws.k, 4);
  EXPECT_EQ(ws.n, 6);  // B: k x n
  EXPECT_EQ(os.m, 4);
  EXPECT_EQ(os.k, kUnbounded);
  EXPECT_EQ(os.n, 6);  // C: m x n
  EXPECT_EQ(is.m, 6);
  EXPECT_EQ(is.k, 4);
  EXPECT_EQ(is.n, kUnbounded);  // A^T: k x m
}

TEST(Dataflows, MaxTileIsTheCompilersTileExtent) {
  // Compiler limits on a 4x6 array with 10 accumulator entries: m <= 5 (one half),
  // k <= 4 (one array height), n <= 6 (one accumulator row).
  const ArrayDims d{4, 6};
  const GemmTile limits{5, 4, 6};
  auto max = [&](Dataflow df) { return dataflow_model(df).max_tile(d, limits); };
  EXPECT_EQ(max(Dataflow::kWeightStationary).m, 5);
  EXPECT_EQ(max(Dataflow::kOutputStationary).m, 4);  // C rows held in the 4 array rows
  EXPECT_EQ(max(Dataflow::kInputStationary).m, 5);   // A^T columns: min(6 cols, 5)
  EXPECT_EQ(max(Dataflow::kInputStationary).k, 4);
  EXPECT_EQ(max(Dataflow::kOutputStationary).n, 6);
  EXPECT_EQ(dataflow_model(Dataflow::kInputStationary).max_tile(d, {100, 4, 6}).m, 6);
}

TEST(Dataflows, ReadinessGatesTheStationaryAndStreamedOperands) {
  // Weights arrive in the FIFO at cycle 30; the matmul was dispatched at cycle 12.
  const auto ws = dataflow_model(Dataflow::kWeightStationary).readiness(30, 12);
  EXPECT_EQ(ws.stationary_ready, 30);
  EXPECT_EQ(ws.stream_ready, 12);
  const auto is = dataflow_model(Dataflow::kInputStationary).readiness(30, 12);
  EXPECT_EQ(is.stationary_ready, 12);
  EXPECT_EQ(is.stream_ready, 30);
  const auto os = dataflow_model(Dataflow::kOutputStationary).readiness(30, 12);
  EXPECT_EQ(os.stationary_ready, 30);
  EXPECT_EQ(os.stream_ready, 30);
}

TEST(Dataflows, FitsAgreesWithBounds) {
  for (Dataflow df : kAllDataflows) {
    const DataflowModel& m = dataflow_model(df);
    const ArrayDims d{3, 5};
    const GemmTile hi = shape_limits(df, d, 9);
    EXPECT_TRUE(m.fits(d, hi)) << m.name();
    EXPECT_FALSE(m.fits(d, {0, 1, 1})) << m.name();
    EXPECT_FALSE(m.fits({0, 5}, {1, 1, 1})) << m.name();
    const GemmTile b = m.tile_bounds(d);
    if (b.m != kUnbounded) {
      EXPECT_FALSE(m.fits(d, {b.m + 1, 1, 1})) << m.name();
    }
    if (b.k != kUnbounded) {
      EXPECT_FALSE(m.fits(d, {1, b.k + 1, 1})) << m.name();
    }
    if (b.n != kUnbounded) {
      EXPECT_FALSE(m.fits(d, {1, 1, b.n + 1})) << m.name();
    }
  }
}

}  // namespace
}  // namespace tessera::array
