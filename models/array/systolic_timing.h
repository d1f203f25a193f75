#pragma once
// Fast, tile-granularity timing model of a systolic array for the three dataflows.
// The engine's array unit calls ArrayPipeline::issue() once per matmul tile.
// Every number here must equal the cycle-exact PE-level reference
// (models/array/pe_reference.h); tests/models/array proves it over many shapes.
//
// Cycle convention: a schedule value t is the boundary before array cycle t, so a
// phase [start, end) occupies cycles start .. end-1 and `done` is one past the cycle
// in which the last result is written. Derivations: docs/validation-array.md.
//
// Notation: R = dims.rows, C = dims.cols, (m, k, n) = the tile, Ls = max(stream, min_stream).
//   ws: stationary B (k x n), streams the m rows of A     -> s = m, w = n
//   is: stationary A^T (k x m), streams the n columns of B -> s = n, w = m
//   ws / is  preload = k      stream = s      drain = R + w - 1
//   os       preload = 0      stream = k      drain = R + m + n - 2
// (A full R x C os tile therefore takes 2R + C + k - 2 cycles: the drain shifts every
// result down its column into the accumulators below the array.)
#include <cstdint>
#include <span>

#include "models/array/dataflow.h"
#include "models/array/tile.h"

namespace tessera::array {

// All of m, k, n >= 1, dims positive, and the stationary part within the array
// (dataflow_model(dataflow).fits).
bool tile_fits(Dataflow dataflow, ArrayDims dims, GemmTile tile);

// Throws std::invalid_argument when !tile_fits(dataflow, dims, tile).
TileTiming tile_timing(Dataflow dataflow, ArrayDims dims, GemmTile tile);

// Back-to-back tiles on one array (the issue rule of each dataflow is its
// DataflowModel::schedule, in models/array/dataflows/). With double buffering the next tile's
// stationary operand loads into the shadow buffer while the current tile streams.
//
// issue() rule for tile t (p = the previous tile; for the first tile S_p = E_p = 0 and
// no previous-tile terms apply):
//  ws / is:
//    preload_start L = max(stationary_ready, double_buffered ? S_p : E_p - 1)
//    preload_end   P = L + k
//    stream_start  S = max(stream_ready, P, E_p)
//  os (no stationary operand: preload_start = preload_end = stream_start; B streams,
//      so `stationary_ready`, the weights' arrival, gates the stream like stream_ready):
//    F = max over all earlier tiles q of (E_q + m_q)   (drain frontier)
//    stream_start  S = max(stream_ready, stationary_ready, E_p,
//                          double_buffered ? F - Ls : F - 1)
//  all:
//    stream_end    E = S + Ls          (Ls = max(natural stream, min_stream_cycles))
//    done            = E + drain
// `done` is not monotone over tiles (a narrow tile may finish before a wide earlier one);
// last_done() is the maximum.
class ArrayPipeline {
 public:
  ArrayPipeline(Dataflow dataflow, ArrayDims dims, bool double_buffered);

  // Schedules the next tile. `stationary_ready`: cycle its stationary operand is
  // available to load (weights arrived in the FIFO); `stream_ready`: cycle its
  // streamed operands are available (the instruction was dispatched);
  // `min_stream_cycles`: a lower bound on streaming imposed from outside (slower
  // MAC modes, unified-buffer bandwidth); 0 = none. `min_preload_cycles`: a lower bound on
  // the stationary load (a padded weight tile shifts all its rows in); 0 = none.
  TileSchedule issue(GemmTile tile, int64_t stationary_ready, int64_t stream_ready,
                     int64_t min_stream_cycles = 0, int64_t min_preload_cycles = 0);

  // Latest `done` of all tiles issued so far (0 before the first).
  int64_t last_done() const { return last_done_; }

 private:
  const DataflowModel& model_;
  ArrayDims dims_;
  bool double_buffered_;
  PipelineState state_;
  int64_t last_done_ = 0;
};

// Total cycles of a sequence of tiles with all operands available at cycle 0:
// the latest `done` of ArrayPipeline::issue over the sequence (0 for none).
int64_t sequence_cycles(Dataflow dataflow, ArrayDims dims, bool double_buffered,
                        std::span<const GemmTile> tiles);

}  // namespace tessera::array
