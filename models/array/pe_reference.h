#pragma once
// Cycle-exact PE-level reference of the systolic array, for validation only.
//
// A rows x cols grid of PEs, each with its own registers, stepped one cycle at a time.
// Every cycle each register takes its next value from its neighbours (synchronous
// logic: everything reads the register state at the start of the cycle and writes at
// its end), and the PEs compute real integer results (operands are int8/int16 values held
// in int32_t, products and sums wrap in 32 bits like the accumulators).
//
// Micro-architecture (docs/validation-array.md has the full description and the
// derivation of the fast model's formulas from it):
//
//  ws / is ("stationary" machine; ws holds W = B, streams X = rows of A, produces C;
//  is holds W = A^T, streams X = columns of B, produces C^T):
//   - Each PE has an operand register (moves right), a partial-sum register (moves down),
//     an active weight and, double buffered, a shadow weight with a `pending` bit.
//   - Loading: the k rows of W enter at the top, last row first, one row per cycle; column
//     j's chain lags column 0 by j cycles (a skew triangle like the operands'), rows
//     below the front do not move, so after k shifts row i of every column holds W[i].
//     Full C-wide rows are shifted, zero-padded beyond the tile's width. Rows >= k are
//     not loaded; their operand input never carries valid data, so their MAC is idle.
//     Double buffered the chain is the shadow registers; otherwise the active ones.
//   - Streaming: operand X[r][i] enters row i at cycle S + off(r) + i (off(r) = r for a
//     natural-rate stream), moves right one PE per cycle through all columns; the partial
//     sum of (r, j) starts in PE(0, j), moves down one PE per cycle through all rows and is
//     added into the accumulators the cycle after it leaves row R-1.
//   - Double buffered: a tile-switch token enters row i at S + i and moves right with the
//     operands; where it passes, the PE copies shadow -> active (zero if nothing pending).
//   - Controller interlocks (read from register state each cycle):
//     load may start when the loader port is idle, the stationary data is ready, and
//       (double buffered) the shadow of PE(0,0) holds nothing pending after this cycle's
//       switch, or (single buffered) every loaded tile has streamed its last operand into
//       row 0 by the end of this cycle;
//     a stream may start when its operands are ready, its tile's column 0 is fully loaded,
//       and the previous stream window has ended.
//
//  os: PE(i, j) accumulates C[i][j]. A[i][p] enters row i at S + off(p) + i moving right,
//   B[p][j] enters column j at S + off(p) + j moving down. After its k-th MAC a PE's result
//   is final (single buffered: in the accumulator register itself; double buffered: moved
//   into a separate output register, freeing the accumulator). When the last row m-1 of a
//   column finishes, that column's results (a block of m entries) shift down one row per
//   cycle through all R rows and out of the bottom into the accumulators. A stream may
//   start when its operands are ready, the previous stream window ended, and the
//   controller's drain-frontier counter F = max over earlier tiles of (stream_end + m)
//   allows: double buffered stream_end >= F, single buffered stream_start >= F - 1.
//
// Every datum carries tags (tile, row, column, step) and every register is checked each
// cycle: a MAC with a weight or partial sum of the wrong tile/index, a write that would
// clobber a value still needed, two values arriving in one register, or a missing operand
// throws ReferenceHazard. run() uses the interlocks above; run_with_schedule() replays a
// caller-given schedule so tests can show the fast model's start times are the earliest
// hazard-free ones.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "models/array/dataflow.h"
#include "models/array/systolic_timing.h"

namespace tessera::array {

struct ReferenceTile {
  GemmTile shape;
  std::vector<int32_t> a;  // m x k, row-major
  std::vector<int32_t> b;  // k x n, row-major
  int64_t stationary_ready = 0;  // as ArrayPipeline::issue
  int64_t stream_ready = 0;
  int64_t min_stream_cycles = 0;  // stretched streams spread their steps evenly, last at stream_end-1
};

struct ReferenceTileResult {
  std::vector<int32_t> c;  // m x n, row-major
  TileSchedule schedule;   // observed: preload_start/end = first shift / one past the last
                           // shift of column 0 (os: = stream_start); stream_start/end = the
                           // stream window; done = one past the last accumulator write.
  int64_t macs = 0;        // MACs performed with valid operands of this tile (= m*k*n)
};

struct ReferenceRun {
  std::vector<ReferenceTileResult> tiles;
  int64_t total_cycles = 0;  // one past the cycle of the last accumulator write
};

class ReferenceHazard : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PeArrayReference {
 public:
  PeArrayReference(Dataflow dataflow, ArrayDims dims, bool double_buffered);

  // Runs the tiles in order with the controller's interlocks.
  ReferenceRun run(std::span<const ReferenceTile> tiles) const;

  // Runs the tiles with preload_start / stream_start of each tile taken from `schedule`
  // (other fields ignored; os ignores preload_start). Throws ReferenceHazard when the
  // array cannot execute that schedule correctly.
  ReferenceRun run_with_schedule(std::span<const ReferenceTile> tiles,
                                 std::span<const TileSchedule> schedule) const;

  Dataflow dataflow() const { return dataflow_; }
  ArrayDims dims() const { return dims_; }
  bool double_buffered() const { return double_buffered_; }

 private:
  ReferenceRun simulate(std::span<const ReferenceTile> tiles,
                        const std::vector<TileSchedule>* forced) const;

  Dataflow dataflow_;
  ArrayDims dims_;
  bool double_buffered_;
};

}  // namespace tessera::array
