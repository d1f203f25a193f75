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

TEST(Dataflows, MaxTileTightensOutsideLimitsByTheArray) {
  // Outside limits on a 4x6 array: m <= 5, k <= 4, n <= 6.
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

TEST(Dataflows, TheCompilersTileStreamsWhatTheArrayDoesNotHold) {
  // 4x6 array, accumulator halves of 10 entries x 6 sums. Each dataflow caps what it holds
  // by the array and streams the rest whole, within what one accumulator half receives.
  const ArrayDims d{4, 6};
  auto max = [&](Dataflow df) {
    const DataflowModel& m = dataflow_model(df);
    return m.max_tile(d, m.accumulator_bounds(10, 6));
  };
  const GemmTile ws = max(Dataflow::kWeightStationary), os = max(Dataflow::kOutputStationary),
                 is = max(Dataflow::kInputStationary);
  EXPECT_EQ(ws.m, 10);  // rows of A stream; m results per accumulator half
  EXPECT_EQ(ws.k, 4);
  EXPECT_EQ(ws.n, 6);
  EXPECT_EQ(os.m, 4);  // C held: m x n within the array
  EXPECT_EQ(os.k, kUnbounded);  // K streams whole: no array-height K tiles
  EXPECT_EQ(os.n, 6);
  EXPECT_EQ(is.m, 6);  // A^T held: k x m within the array
  EXPECT_EQ(is.k, 4);
  EXPECT_EQ(is.n, 10);  // B's columns stream whole: one accumulator entry each
}

TEST(Dataflows, StreamedWeightsAreNeededWhenTheStreamReachesThem) {
  // 4x6 array. ws holds B: every FIFO tile before the stream. os streams B's rows, a FIFO
  // tile of 4 rows per 4 steps; is streams B's columns, 6 per FIFO tile.
  const ArrayDims d{4, 6};
  EXPECT_EQ(dataflow_model(Dataflow::kWeightStationary).weight_stream_step(d), 0);
  EXPECT_EQ(dataflow_model(Dataflow::kOutputStationary).weight_stream_step(d), 4);
  EXPECT_EQ(dataflow_model(Dataflow::kInputStationary).weight_stream_step(d), 6);
  const std::vector<int64_t> ready = {10, 30, 31};
  EXPECT_EQ(dataflow_model(Dataflow::kWeightStationary).weights_ready(d, ready, 12, 12), 31);
  // os, k = 12 at the natural rate: tiles needed at steps 0, 4, 8: max(10, 26, 23) = 26.
  EXPECT_EQ(dataflow_model(Dataflow::kOutputStationary).weights_ready(d, ready, 12, 12), 26);
  // Stretched to 23 cycles, step p is at p * 22 / 11 = 2p: max(10, 30 - 8, 31 - 16) = 22.
  EXPECT_EQ(dataflow_model(Dataflow::kOutputStationary).weights_ready(d, ready, 12, 23), 22);
  // is, n = 18: steps 0, 6, 12: max(10, 24, 19) = 24.
  EXPECT_EQ(dataflow_model(Dataflow::kInputStationary).weights_ready(d, ready, 18, 18), 24);
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

// The activity the energy model counts for a tile (m, k, n) = (2, 3, 4) of 8-bit operands and
// 32-bit partial sums, 24 MACs. ws holds B (3 x 4 = 12 PEs) for 2 steps, writes per MAC A and
// a sum (24 x 40 = 960) and shifts B in (12 x 8 bits x (3 + 1) / 2 = 192); is holds A^T (6 PEs)
// for 4 steps, 960 + 6 x 8 x 2 = 1056; os holds C (8 PEs) for 3 steps, writes A, B and a sum
// per MAC (24 x 48 = 1152) and drains C (8 x 32 x (2 + 1) / 2 = 384).
TEST(Dataflows, OccupancyAndRegisterBitsByHand) {
  const GemmTile t{2, 3, 4};
  auto model = [](Dataflow df) -> const DataflowModel& { return dataflow_model(df); };
  const TileOccupancy ws = model(Dataflow::kWeightStationary).occupancy(t);
  const TileOccupancy is = model(Dataflow::kInputStationary).occupancy(t);
  const TileOccupancy os = model(Dataflow::kOutputStationary).occupancy(t);
  EXPECT_EQ(ws.pes, 12);
  EXPECT_EQ(ws.steps, 2);
  EXPECT_EQ(is.pes, 6);
  EXPECT_EQ(is.steps, 4);
  EXPECT_EQ(os.pes, 8);
  EXPECT_EQ(os.steps, 3);
  EXPECT_EQ(model(Dataflow::kWeightStationary).register_bits(t, 8, 8, 32), 960 + 192);
  EXPECT_EQ(model(Dataflow::kInputStationary).register_bits(t, 8, 8, 32), 960 + 96);
  EXPECT_EQ(model(Dataflow::kOutputStationary).register_bits(t, 8, 8, 32), 1152 + 384);
}

}  // namespace
}  // namespace tessera::array
