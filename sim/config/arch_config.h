#pragma once
// The accelerator description: YAML (configs/*.yaml) -> validated structs.
// Every field is checked at load time; an error names file, line and key path.
// The parts are the models' own parameters (models/<area>/params.h), under the same names.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "models/array/params.h"
#include "models/interconnect/params.h"
#include "models/memory/params.h"
#include "models/units/params.h"
#include "sim/common/dtype.h"
#include "sim/config/energy_config.h"

namespace tessera {

class YamlNode;

struct ArchConfig {
  std::string name;
  std::string source;  // the file it came from
  double clock_mhz = 0;
  ArrayConfig array;
  UnifiedBufferConfig unified_buffer;
  AccumulatorConfig accumulators;
  WeightFifoConfig weight_fifo;
  WeightMemoryConfig weight_memory;
  PcieConfig pcie;
  VectorUnitConfig vector_unit;
  ControllerConfig controller;
  EnergyConfig energy;  // energy:, resolved to technology_nm and vdd_v (energy_config.h)
  // Weight and activation transfers cost nothing: weight memory and PCIe take no time and
  // the unified buffer's ports do not pace the array or the vector unit (bytes are still
  // counted). For comparing compute cycles with analytical tools (docs/validation.md §6).
  bool ideal_memory = false;

  double clock_hz() const { return clock_mhz * 1e6; }
  // Peak tera-ops per second (2 ops per MAC) at a precision pair:
  // rows * cols * mode rate * 2 * clock_hz / 1e12. Throws InputError if the array has no such mode.
  double peak_tops(Dtype a = Dtype::kInt8, Dtype b = Dtype::kInt8) const;
};

// Loads and validates; throws InputError ("file:line:col: key.path: what is wrong").
ArchConfig load_arch_config(const std::filesystem::path& path);
ArchConfig parse_arch_config(const YamlNode& root);

}  // namespace tessera
