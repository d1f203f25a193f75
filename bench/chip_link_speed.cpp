// Wall time per collective on the chip-link model (models/interconnect/chip_link.h, plain C++):
// docs/performance.md "Chip-link collectives". The LLM cost table calls all_reduce_s per layer
// and table point, so a call must take microseconds. Prints, per case, the simulated time and
// the median over 5 rounds of the wall time per call.
//   build/bench/bench_chip_link [calls per round]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "models/interconnect/chip_link.h"

using tessera::models::ChipLinkParams;

namespace {

struct Case {
  const char* name;
  ChipLinkParams links;
  int chips;
  int64_t bytes;
};

// tpu-v5e / tpu-v6e's `ici:` (configs/): 4 ports, 2-D torus, no wraparound below 16 chips.
ChipLinkParams tpu(double gb_per_s) {
  ChipLinkParams p;
  p.bandwidth_gb_per_s = gb_per_s;
  p.latency_ns = 1000;
  p.ports = 4;
  p.topology = ChipLinkParams::Topology::kTorus2d;
  p.wraparound = false;
  return p;
}

ChipLinkParams ring8() {
  ChipLinkParams p = tpu(100);
  p.topology = ChipLinkParams::Topology::kRing;
  p.wraparound = true;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  // A decode step's all-reduce of Llama-3-8B (hidden 4096, bf16) at batch 64: 512 KiB;
  // a 2k-token prefill chunk: 16 MiB.
  const std::vector<Case> cases = {
      {"tpu-v6e x4 (2x2 mesh), 512 KiB", tpu(100), 4, 64 * 4096 * 2},
      {"tpu-v5e x8 (2x4 mesh), 512 KiB", tpu(50), 8, 64 * 4096 * 2},
      {"tpu-v5e x8 (2x4 mesh), 16 MiB", tpu(50), 8, 2048 * 4096 * 2},
      {"tpu-v6e x16 (4x4 mesh), 512 KiB", tpu(100), 16, 64 * 4096 * 2},
      {"ring x8, 2 ports, 512 KiB", ring8(), 8, 64 * 4096 * 2},
  };
  for (const Case& c : cases) {
    std::vector<double> per_call_us;
    double simulated = 0, sink = 0;
    for (int round = 0; round < 5; ++round) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) sink += tessera::models::all_reduce_s(c.links, c.chips, c.bytes + (i & 1));
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      per_call_us.push_back(wall / calls * 1e6);
      simulated = tessera::models::all_reduce_s(c.links, c.chips, c.bytes);
    }
    std::sort(per_call_us.begin(), per_call_us.end());
    std::printf("%-34s all-reduce %9.3f us simulated   %7.2f us wall per call (median of 5 x %d)%s\n", c.name,
                simulated * 1e6, per_call_us[2], calls, sink < 0 ? " " : "");
  }
  return 0;
}
