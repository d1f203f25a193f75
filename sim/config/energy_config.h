#pragma once
// The `energy:` section of an architecture config (docs/energy.md, docs/configs.md):
// technology node and supply, per-action energies, static power and area coefficients,
// resolved at load time to the config's node and voltage. A value the config leaves out
// takes its technology default (sim/config/energy_tables.h), scaled by the node rules;
// `defaulted` names every such key, so the report can say which values were not given.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/dtype.h"
#include "sim/common/energy_class.h"

namespace tessera {

class YamlNode;
struct ArchConfig;

// Energy of one MAC of one of the array's modes, at the config's node and voltage.
struct MacEnergy {
  Dtype a = Dtype::kInt8;
  Dtype b = Dtype::kInt8;
  double pj = 0;       // a useful MAC
  double idle_pj = 0;  // a PE clocked while the tile streams without a useful weight in it
};

// One on-chip SRAM (unified buffer, accumulators, weight FIFO) at the config's node.
struct SramEnergy {
  double read_pj_per_byte = 0;
  double write_pj_per_byte = 0;
  double leakage_w = 0;
  double area_mm2 = 0;        // data arrays, before area.sram_overhead
  std::string organization;  // how the table was asked: "24 MiB, 256 B accesses, lop cells"
};

struct EnergyConfig {
  double technology_nm = 28;
  double vdd_v = 0.9;
  std::vector<MacEnergy> mac;            // one per array.mac_modes entry, in that order
  double register_pj_per_bit = 0;        // per array pipeline-register bit written, toggle fraction included
  // Vector unit: explicit values by function name (scaled), else vector_default_pj when the
  // config gave `default`, else the built-in table's figure for the function's energy class
  // scaled by vector_builtin_scale.
  std::map<std::string, double, std::less<>> vector_pj;
  std::optional<double> vector_default_pj;
  double vector_builtin_scale = 1;
  SramEnergy unified_buffer;
  SramEnergy accumulators;
  SramEnergy weight_fifo;
  double dram_read_pj_per_bit = 0;
  double dram_activation_nj = 0;  // per row activation (ACT/PRE pair)
  int64_t dram_row_bytes = 0;     // weights stream: one activation per row read
  double dram_background_w = 0;   // standby power of the weight-memory devices
  double pcie_pj_per_bit = 0;     // 0 unless given: no sourced figure exists (UNCONFIRMED)
  double leakage_w = 0;           // static power of the chip, always on
  double logic_leakage_w_per_mm2 = 0;  // leakage of the logic area (matrix unit and the rest of the die) per mm^2
  double on_w = 0;                // clock tree and ungated state while the chip serves
  double host_power_w = 0;        // the host server's power per accelerator (total vs incremental perf/W)
  // Area.
  double pe_area_um2 = 0;     // one PE's MAC at the node (its widest full-rate mode), before pe_overhead
  double pe_overhead = 1;     // PE area / MAC area (pipeline registers, wiring, control), from a floor plan
  double sram_overhead = 1;   // SRAM macro area / CACTI data array (periphery, ECC, routing)
  double other_fraction = 0;  // share of the die outside the array and SRAMs (I/O, control, vector unit)

  std::vector<std::string> defaulted;                       // key paths that took the technology default
  std::vector<std::pair<std::string, std::string>> sources; // group -> where its values came from and how they were scaled

  double mac_pj(Dtype a, Dtype b) const;       // 0 when the array has no such mode
  double idle_mac_pj(Dtype a, Dtype b) const;
  // One element operation of vector function `function`, whose OpDef row (sim/graph/ops)
  // names energy class `cls`.
  double vector_op_pj(std::string_view function, EnergyClass cls) const;
};

// Floor-plan style area (mm^2): the array's PEs, the three SRAMs and the rest of the die.
struct AreaBreakdown {
  double matrix_unit = 0;
  double unified_buffer = 0;
  double accumulators = 0;
  double weight_fifo = 0;
  double other = 0;  // I/O, control, vector unit, interfaces: other_fraction of the die
  double total() const { return matrix_unit + unified_buffer + accumulators + weight_fifo + other; }
  double logic() const { return matrix_unit + other; }  // everything but the SRAM macros
};
AreaBreakdown area_breakdown(const EnergyConfig& e, int64_t rows, int64_t cols);

// Parses `energy:` of the config `root` (absent: every value defaulted, at the reference
// 28 nm and 0.9 V) once `arch`'s other sections are parsed; throws InputError naming file,
// line and key.
EnergyConfig parse_energy_config(const YamlNode& root, const ArchConfig& arch);

}  // namespace tessera
