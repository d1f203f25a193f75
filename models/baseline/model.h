#pragma once
// The analytic CPU/GPU baseline model (DESIGN.md §7), applied layer by layer:
//   kernel   = max(compute at the efficiency curve, DRAM bytes / sustained bandwidth,
//                  on-chip bytes / on-chip bandwidth)
//   layer    = kernel + launch overhead (one kernel per layer)
//   workload = sum of layers + host-link transfers of the inputs and outputs (GPU)
// Matrix layers (fc, conv2d as an implicit GEMM) compute 2*m*k*n ops; vector layers
// (element-wise, pooling, concat) are bandwidth-bound kernels with no compute term.
#include <cstdint>
#include <string>
#include <vector>

#include "models/baseline/spec.h"

namespace tessera::baseline {

// One tensor a layer reads or writes, for the whole batch.
struct TensorUse {
  int64_t elements = 0;
  bool host = false;  // a graph input (read) or graph output (written): lives in host memory
};

// What one layer asks of a baseline, independent of the accelerator it was compiled for.
struct LayerWork {
  std::string name;
  std::string op;
  bool matrix = false;     // fc / conv2d: a GEMM
  bool layout_only = false;  // flatten: no data moves, no kernel
  int64_t m = 0, k = 0, n = 0;  // GEMM shape for the batch (matrix layers): sets the efficiency
  int64_t macs = 0;             // multiply-accumulates for the batch (m*k*n, or what grouped/recurrent ops do)
  int64_t weights = 0;          // weight elements (read once per batch)
  std::vector<TensorUse> inputs;
  TensorUse output;
};

struct Workload {
  std::string name;
  int64_t batch = 1;
  std::vector<LayerWork> layers;
  int64_t host_input_elements = 0;   // graph inputs for the batch (GPU: sent over the host link)
  int64_t host_output_elements = 0;  // graph outputs for the batch (GPU: returned over the host link)
  int64_t total_weights() const;
  int64_t total_macs() const;
};

struct LayerEstimate {
  double efficiency = 0;     // of the peak, from the curve (matrix layers; 0 for vector layers)
  int tile = -1;             // the kernel variant (EfficiencyCurve::tiles index) the curve picked; -1 for vector layers
  double compute_s = 0;
  double dram_bytes = 0;
  double on_chip_bytes = 0;
  double dram_s = 0;
  double on_chip_s = 0;
  double overhead_s = 0;
  double latency_s = 0;      // max(compute, dram, on-chip) + overhead
  std::string bound;         // "compute" | "memory" | "on_chip" | "overhead" | "none": the largest term
};

struct HostLinkEstimate {
  double to_device_bytes = 0, to_host_bytes = 0;
  double to_device_s = 0, to_host_s = 0;
  double total_s() const { return to_device_s + to_host_s; }
};

struct Estimate {
  Precision precision = Precision::kFp32;
  bool weights_on_chip = false;  // all weights fit in half the on-chip capacity: resident across batches
  std::vector<LayerEstimate> layers;  // parallel to Workload::layers
  HostLinkEstimate host_link;         // zero for CPUs
  double latency_s = 0;
  double dram_bytes = 0;
  double weight_bytes = 0;  // weights at the baseline's precision
};

// Residency rules (documented in docs/baselines.md):
//  - an activation tensor whose bytes fit in half the on-chip capacity stays on chip between its
//    producer and consumers; a larger one is written to and read from DRAM;
//  - graph inputs are read from memory (GPU: after the host-link transfer), graph outputs written to it;
//  - weights come from DRAM once per batch, unless all of the workload's weights fit in half the
//    on-chip capacity, in which case they stay resident and are read at on-chip bandwidth.
Estimate estimate(const BaselineSpec& spec, const Workload& work, Precision precision);
inline Estimate estimate(const BaselineSpec& spec, const Workload& work) { return estimate(spec, work, spec.precision); }

}  // namespace tessera::baseline
