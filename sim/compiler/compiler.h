#pragma once
// Lowers a graph onto an architecture: tiles matrix layers onto the systolic
// array (implicit im2col for conv), streams weight tiles through the weight FIFO
// with a prefetch distance of the FIFO depth, accumulates across K tiles in
// double-buffered accumulator halves, writes activations back to the unified
// buffer, and moves inputs/outputs over PCIe. When one sample does not fit the unified
// buffer, activations spill to host memory (Belady eviction, read back before their next
// consumer) and layers whose own working set does not fit run in row tiles streamed
// through host memory (docs/workloads.md, "Spills and row tiles").
#include "sim/compiler/compiled.h"
#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"

namespace tessera::compiler {

struct CompileOptions {
  int64_t batch = 0;  // 0: the workload's default batch
  // Fold repeated instruction patterns into repeats (the compact program, issue 19); off:
  // every instruction stored on its own (the expanded program: the same instructions and
  // timing, more memory; for checking the compact form).
  bool compact = true;
  // The most instruction templates the program may store (0: the simulator's bound,
  // kMaxStoredInstructions in lowering.h); tests set a small one to reach it quickly.
  size_t max_stored_templates = 0;
};

// The samples one pass through the graph holds at `batch` (0: the workload's default): the
// batch itself when it fits the unified buffer, else the most that do (compile's sub_batch,
// without lowering).
int64_t samples_per_pass(const graph::Graph& graph, const ArchConfig& arch, int64_t batch);

// Throws InputError when the workload cannot run on the config (e.g. a layer's smallest
// row tile exceeds the unified buffer, weights exceed weight memory).
Program compile(const graph::Graph& graph, const ArchConfig& arch, const CompileOptions& options = {});

}  // namespace tessera::compiler
