#pragma once
// The measured baseline `host`: runs the workload's layers on this machine's CPU
// (matrix layers as fp32 OpenBLAS sgemm, vector layers as plain element-wise loops)
// and times them: warm-up calls, then the median of repeats. Large layers are
// measured on a row slice of the GEMM (or a prefix of the elements) and scaled
// linearly, so the total time stays bounded; the result says which layers were.
// Measurements are wall-clock: unlike every modelled number they vary from run to run.
#include <cstdint>
#include <string>
#include <vector>

#include "models/baseline/model.h"

namespace tessera::baseline {

struct HostOptions {
  int warmup = 1;                  // untimed calls before the timed ones
  int repeats = 5;                 // timed calls; the median is kept
  double max_gflop_per_call = 0.5; // a larger GEMM is run on ceil(m * cap / gflop) rows and scaled
  int64_t max_elements_per_call = int64_t{4} << 20;  // vector layers: elements per timed call
  double budget_s = 60;            // when spent, the remaining layers get one timed call each
};

struct HostLayerMeasurement {
  bool measured = false;   // false for layout-only layers (nothing runs)
  double seconds = 0;      // for the whole layer: median * scale
  double median_s = 0;     // of the timed calls, on what was actually run
  double min_s = 0, max_s = 0;
  int repeats = 0;
  int64_t run_rows = 0;    // GEMM rows (m) or elements actually run per call
  int64_t full_rows = 0;   // ... and what the layer has
  double scale = 1;        // seconds / median: full / run rows (> 1 for a slice), times layer MACs / (m*k*n)
};

struct HostMeasurement {
  std::string cpu_model;       // /proc/cpuinfo "model name"
  int logical_cpus = 0;
  int blas_threads = 0;
  std::string blas_config;     // openblas_get_config()
  double sgemm_tflops = 0;     // median of a 1024^3 sgemm: the roofline peak
  double triad_gb_per_s = 0;   // median of a STREAM-like triad over 3 x 64 MiB: the roofline bandwidth
  bool budget_exhausted = false;
  HostOptions options;
  std::vector<HostLayerMeasurement> layers;  // parallel to Workload::layers
  double total_s() const;
};

// True when this build has OpenBLAS (otherwise measure_host throws InputError).
bool host_blas_available();
HostMeasurement measure_host(const Workload& work, const HostOptions& options = {});

}  // namespace tessera::baseline
