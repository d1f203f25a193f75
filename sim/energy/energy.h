#pragma once
// The energy, power and area model (docs/energy.md). Three power terms, because a sum of
// action energies cannot reproduce a real chip's idle power or its energy proportionality:
//   leakage   always on (static power of the chip)
//   on        clock tree and ungated state while the chip is serving
//   dynamic   activity x energy per action, from the units' counters
// plus the weight memory's background power. Every coefficient comes from the config's
// energy: section (sim/config/energy_config.h), already at the config's node and supply.
// Plain C++: counts in, joules out; no SystemC, no report.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/units/activity.h"
#include "sim/config/arch_config.h"

namespace tessera::energy {

// Everything a run (or a part of it) did, in the units of the per-action energies.
struct Activity {
  struct Macs {
    Dtype a = Dtype::kInt8;
    Dtype b = Dtype::kInt8;
    int64_t useful = 0;
    int64_t idle = 0;
    bool operator==(const Macs&) const = default;
  };
  std::vector<Macs> macs;  // per precision pair
  int64_t register_bits = 0;
  uint64_t ub_read_bytes = 0;
  uint64_t ub_write_bytes = 0;
  int64_t accumulator_reads = 0;   // values of accumulators.width_bits
  int64_t accumulator_writes = 0;
  uint64_t weight_fifo_bytes = 0;  // written in, and read out by the array
  std::vector<std::pair<std::string, int64_t>> vector_ops;  // function -> element operations
  uint64_t dram_bytes = 0;
  uint64_t pcie_bytes = 0;         // payload, both directions

  void add_macs(Dtype a, Dtype b, int64_t useful, int64_t idle);
  void add_vector_ops(std::string_view function, int64_t count);
  void add(const models::InstructionActivity& a);
  bool operator==(const Activity&) const = default;
};

// The report's components, in order (summary.energy_breakdown_j, layers.csv).
inline constexpr std::array<std::string_view, 10> kComponents = {
    "mac", "register", "unified_buffer", "accumulators", "weight_fifo", "vector", "dram", "pcie", "leakage", "on"};

// Joules per component; they sum to total().
struct Breakdown {
  std::array<double, kComponents.size()> j{};
  double& operator[](std::string_view component);
  double operator[](std::string_view component) const;
  double total() const;
  double chip() const;     // without the off-chip weight memory and the PCIe link
  double dynamic() const;  // activity-driven only (no leakage, on, or DRAM background)
  Breakdown& operator+=(const Breakdown& o);
};

// Energy of `activity` performed over `seconds` of serving.
Breakdown energy_of(const EnergyConfig& e, int64_t accumulator_value_bytes, const Activity& activity, double seconds);
inline Breakdown energy_of(const ArchConfig& arch, const Activity& activity, double seconds) {
  return energy_of(arch.energy, arch.accumulators.width_bits / 8, activity, seconds);
}

// Power while the workload repeats at `load` (fraction of the time the chip runs it;
// the rest it serves idle, so the on term stays): leakage + DRAM background + on +
// load x the run's activity-driven power. Idle (not serving, load 0): leakage + DRAM background.
struct PowerModel {
  double idle_w = 0;         // not serving
  double static_w = 0;       // serving, no work: idle + on
  double dynamic_w = 0;      // the run's activity-driven power at full load
  double at_load(double load) const { return static_w + load * dynamic_w; }
};
PowerModel power_model(const EnergyConfig& e, const Breakdown& run, double seconds);

// Floor-plan style area (sim/config/energy_config.h holds the formula, which the default
// leakage also uses).
using Area = AreaBreakdown;
Area area_of(const ArchConfig& arch);

}  // namespace tessera::energy
