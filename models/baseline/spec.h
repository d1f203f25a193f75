#pragma once
// CPU/GPU baseline descriptions (configs/baselines/*.yaml, schema in docs/baselines.md):
// peak ops per precision, memory and on-chip capacity/bandwidth, a GEMM-shape
// efficiency curve, per-kernel overheads and, for GPUs, the host link. Unknown keys
// are errors; every error names file, line and key path.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/interconnect/chip_link.h"

namespace tessera {
class YamlNode;
}

namespace tessera::baseline {

// Arithmetic a baseline runs the workload in. Bytes per element follow it
// (weights and activations alike; accumulation is internal to the kernels).
enum class Precision { kFp32, kTf32, kBf16, kFp16, kInt8 };
std::string_view precision_name(Precision p);
std::optional<Precision> parse_precision(std::string_view s);
int64_t precision_bytes(Precision p);  // fp32/tf32 4, bf16/fp16 2, int8 1

enum class Kind { kCpu, kGpu };
std::string_view kind_name(Kind k);

// One GEMM kernel variant: the output block a core/SM computes at a time, and the
// fraction of the peak the variant reaches when every unit is busy and k is long.
struct GemmTileShape {
  int64_t m = 1;
  int64_t n = 1;
  double max = 1.0;
};

// Fraction of the peak a GEMM C[m x n] += A[m x k] B[k x n] reaches, per tile variant t:
//   tiles     = ceil(m / t.m) * ceil(n / t.n)             output blocks
//   waves     = ceil(tiles / parallel_units)              rounds over the cores/SMs
//   spatial   = m * n / (waves * parallel_units * t.m * t.n)
//                                                         padding of partial blocks + idle units in the last wave
//   reduction = k / (k + k_half)                          per-block prologue/epilogue amortised over k
//   efficiency(t) = t.max * spatial * reduction
// and the library picks the best variant (as cuBLAS/oneDNN heuristics do): the maximum over t.
// Small matrices fill few units and short reductions amortise little: they do not reach peak.
struct EfficiencyCurve {
  int64_t parallel_units = 1;
  double k_half = 0.0;
  std::vector<GemmTileShape> tiles;  // at least one

  double spatial(const GemmTileShape& t, int64_t m, int64_t n) const;
  double reduction(int64_t k) const;
  double at(const GemmTileShape& t, int64_t m, int64_t k, int64_t n) const {
    return t.max * spatial(t, m, n) * reduction(k);
  }
  // Index of the best variant for the shape (the first of equals).
  size_t best(int64_t m, int64_t k, int64_t n) const;
  double at(int64_t m, int64_t k, int64_t n) const { return tiles.empty() ? 0.0 : at(tiles[best(m, k, n)], m, k, n); }
};

// GPU only: PCIe to the host, which holds a batch's inputs and receives its outputs.
struct HostLink {
  double bandwidth_gb_per_s = 0;  // sustained, per direction
  double latency_us = 0;          // per transfer (DMA set-up, synchronisation)
};

// Power of one die/socket (optional `power:`): the paper's measured idle and busy figures
// for its Haswell and K80, vendor TDPs (labelled as such) for modern parts. busy_w is what
// the part draws while it runs the workload: measured busy power, or the TDP when that is all
// there is. host_w is the share of the host server's power per die (total perf/W adds it;
// incremental perf/W leaves it out).
struct PowerSpec {
  double idle_w = 0;  // 0: not given
  double busy_w = 0;
  double tdp_w = 0;   // 0: not given
  double host_w = 0;
  std::string basis;  // "measured" (busy_w given) or "tdp" (busy_w taken from tdp_w)
};

struct BaselineSpec {
  std::string id;            // file stem: "k80"
  std::string name;          // display name: "NVIDIA K80 (one GK210 die)"
  std::string description;
  std::string source;        // the file it came from
  Kind kind = Kind::kCpu;
  std::map<Precision, double> peak_tops;  // dense tera-ops/s (2 ops per MAC) per precision
  Precision precision = Precision::kFp32; // what the model runs (spec key `precision`)

  // Off-chip memory (CPU: DRAM of the socket; GPU: device memory).
  std::string memory_technology;
  uint64_t memory_capacity_bytes = 0;
  double memory_bandwidth_gb_per_s = 0;  // peak; the roofline uses it
  double memory_efficiency = 1.0;        // share of the peak that streaming kernels sustain

  // Last-level on-chip storage shared by all cores/SMs (CPU L3, GPU L2): activations
  // that fit stay there between layers; weights stay there if all of them fit.
  uint64_t on_chip_bytes = 0;
  double on_chip_bandwidth_gb_per_s = 0;

  EfficiencyCurve efficiency;
  double launch_us = 0;  // per kernel: GPU launch latency, CPU framework dispatch + thread fork/join

  std::optional<HostLink> host_link;  // required for GPUs, rejected for CPUs
  std::optional<PowerSpec> power;     // absent: no perf/W for this baseline
  // GPU-to-GPU links (`chip_link:`, NVLink through NVSwitch) for tensor parallelism across GPUs
  // (LLM serving); collectives run as rings on them (models/interconnect/chip_link.h).
  std::optional<models::ChipLinkParams> chip_link;

  double peak_tops_at(Precision p) const;  // throws InputError if the part has no such mode
  double peak() const { return peak_tops_at(precision); }
};

BaselineSpec parse_baseline_spec(const YamlNode& root, const std::string& id);
BaselineSpec load_baseline_spec(const std::filesystem::path& path);  // id = file stem

// Sorted stems of the *.yaml files in `dir` (empty if it does not exist).
std::vector<std::string> available_specs(const std::filesystem::path& dir);

}  // namespace tessera::baseline
