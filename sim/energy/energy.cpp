#include "sim/energy/energy.h"

#include <algorithm>
#include <stdexcept>

#include "sim/graph/ops/registry.h"

namespace tessera::energy {

void Activity::add_macs(Dtype a, Dtype b, int64_t useful, int64_t idle) {
  for (Macs& m : macs) {
    if (m.a == a && m.b == b) {
      m.useful += useful;
      m.idle += idle;
      return;
    }
  }
  macs.push_back(Macs{a, b, useful, idle});
}

void Activity::add_vector_ops(std::string_view function, int64_t count) {
  for (auto& [f, n] : vector_ops) {
    if (f == function) {
      n += count;
      return;
    }
  }
  vector_ops.emplace_back(std::string(function), count);
}

void Activity::add(const models::InstructionActivity& a) {
  if (a.macs > 0 || a.idle_macs > 0) add_macs(a.a_dtype, a.b_dtype, a.macs, a.idle_macs);
  register_bits += a.register_bits;
  ub_read_bytes += a.ub_read_bytes;
  ub_write_bytes += a.ub_write_bytes;
  accumulator_reads += a.accumulator_reads;
  accumulator_writes += a.accumulator_writes;
  weight_fifo_bytes += a.weight_fifo_bytes;
  for (const models::VectorOps& v : a.vector) {
    if (v.count > 0) add_vector_ops(v.function, v.count);
  }
  dram_bytes += a.dram_bytes;
  pcie_bytes += a.pcie_bytes_to_device + a.pcie_bytes_to_host;
}

namespace {
size_t index_of(std::string_view component) {
  for (size_t i = 0; i < kComponents.size(); ++i) {
    if (kComponents[i] == component) return i;
  }
  throw std::logic_error("energy: no component '" + std::string(component) + "'");
}

// A vector function's energy class, from its OpDef row; a function without one is a
// simulator bug, not a price to guess.
EnergyClass energy_class_of(std::string_view function) {
  const auto c = graph::vector_function_energy_class(function);
  if (!c) {
    throw std::logic_error("energy: vector function '" + std::string(function) +
                           "' has no energy class (an OpDef row in sim/graph/ops names it)");
  }
  return *c;
}
}  // namespace

double& Breakdown::operator[](std::string_view c) { return j[index_of(c)]; }
double Breakdown::operator[](std::string_view c) const { return j[index_of(c)]; }

double Breakdown::total() const {
  double t = 0;
  for (double v : j) t += v;
  return t;
}

double Breakdown::chip() const { return total() - (*this)["dram"] - (*this)["pcie"]; }

double Breakdown::dynamic() const { return total() - (*this)["leakage"] - (*this)["on"]; }

Breakdown& Breakdown::operator+=(const Breakdown& o) {
  for (size_t i = 0; i < j.size(); ++i) j[i] += o.j[i];
  return *this;
}

Breakdown energy_of(const EnergyConfig& e, int64_t accumulator_value_bytes, const Activity& a, double seconds) {
  constexpr double pj = 1e-12;
  Breakdown b;
  for (const Activity::Macs& m : a.macs) {
    b["mac"] += (static_cast<double>(m.useful) * e.mac_pj(m.a, m.b) + static_cast<double>(m.idle) * e.idle_mac_pj(m.a, m.b)) * pj;
  }
  b["register"] = static_cast<double>(a.register_bits) * e.register_pj_per_bit * pj;
  b["unified_buffer"] = (static_cast<double>(a.ub_read_bytes) * e.unified_buffer.read_pj_per_byte +
                         static_cast<double>(a.ub_write_bytes) * e.unified_buffer.write_pj_per_byte) * pj;
  const double value_bytes = static_cast<double>(accumulator_value_bytes);
  b["accumulators"] = (static_cast<double>(a.accumulator_reads) * e.accumulators.read_pj_per_byte +
                       static_cast<double>(a.accumulator_writes) * e.accumulators.write_pj_per_byte) * value_bytes * pj;
  b["weight_fifo"] = static_cast<double>(a.weight_fifo_bytes) *
                     (e.weight_fifo.write_pj_per_byte + e.weight_fifo.read_pj_per_byte) * pj;
  for (const auto& [function, n] : a.vector_ops) {
    b["vector"] += static_cast<double>(n) * e.vector_op_pj(function, energy_class_of(function)) * pj;
  }
  // Weights stream: one row activation per row_bytes read.
  const double activations = e.dram_row_bytes > 0 ? static_cast<double>(a.dram_bytes) / static_cast<double>(e.dram_row_bytes) : 0;
  b["dram"] = static_cast<double>(a.dram_bytes) * 8 * e.dram_read_pj_per_bit * pj + activations * e.dram_activation_nj * 1e-9 +
              e.dram_background_w * seconds;
  b["pcie"] = static_cast<double>(a.pcie_bytes) * 8 * e.pcie_pj_per_bit * pj;
  b["leakage"] = e.leakage_w * seconds;
  b["on"] = e.on_w * seconds;
  return b;
}

PowerModel power_model(const EnergyConfig& e, const Breakdown& run, double seconds) {
  PowerModel p;
  p.idle_w = e.leakage_w + e.dram_background_w;
  p.static_w = p.idle_w + e.on_w;
  // The run's activity-driven energy: everything but the time-driven terms.
  const double activity_j = run.total() - run["leakage"] - run["on"] - e.dram_background_w * seconds;
  p.dynamic_w = seconds > 0 ? activity_j / seconds : 0;
  return p;
}

Area area_of(const ArchConfig& arch) { return area_breakdown(arch.energy, arch.array.rows, arch.array.cols); }

}  // namespace tessera::energy
