#pragma once
// The accelerator description: YAML (configs/*.yaml) -> validated structs.
// Every field is checked at load time; an error names file, line and key path.
// The parts are the models' own parameters (models/<area>/params.h), under the same names.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "models/array/params.h"
#include "models/interconnect/chip_link.h"
#include "models/interconnect/params.h"
#include "models/memory/params.h"
#include "models/units/params.h"
#include "sim/common/dtype.h"
#include "sim/config/energy_config.h"

namespace tessera {

class YamlNode;

// Where a class of tensors lives between runs (DESIGN.md §4): in host memory, so it crosses
// the host link (TPU v1's activations), or in device memory, already there when the program
// starts (a JAX or PyTorch kernel timing: operands and results in HBM).
enum class Residency { kHost, kDevice };
std::string_view residency_name(Residency r);

struct ResidencyConfig {
  Residency inputs = Residency::kHost;   // graph inputs
  Residency weights = Residency::kDevice;  // weights: in device (weight) memory, or host memory (fetched over PCIe)
  Residency outputs = Residency::kHost;  // graph outputs
  // Activations evicted from the scratchpad go where the inputs live: over the host link
  // (TPU v1) or to device memory.
  Residency spills() const { return inputs; }
};

// A per-run override of the config's residency: `--residency device` (inputs and outputs), or
// per class `--residency inputs=device,weights=host` (classes left out keep the config's value).
// Throws InputError naming the flag and what is allowed.
void apply_residency_override(ResidencyConfig& r, const std::string& spec, const std::string& flag = "--residency");

struct ArchConfig {
  std::string name;
  std::string source;  // the file it came from
  double clock_mhz = 0;
  // Cores of the chip (TPU v4: two TensorCores), each with `array.count` matrix units, a
  // vector unit, a scratchpad (unified_buffer), accumulators, DMA engines and a controller;
  // they share device memory and the host link.
  int64_t cores = 1;
  // The cores run one program as one device, each layer's tiles split over all of them (JAX's
  // "megacore" on TPU v4). Off: a program runs on core 0 alone (each core is its own device).
  bool megacore = true;
  ArrayConfig array;
  UnifiedBufferConfig unified_buffer;
  AccumulatorConfig accumulators;
  WeightFifoConfig weight_fifo;
  WeightMemoryConfig weight_memory;
  PcieConfig pcie;
  bool has_host_link = true;  // false: no `pcie:` section; every tensor is device-resident
  // Chip-to-chip links (`ici:`), for collectives across chips (tensor parallelism). A chip
  // without the section has none: a multi-chip run on it is refused by its caller.
  models::ChipLinkParams ici;
  bool has_chip_links = false;
  VectorUnitConfig vector_unit;
  ControllerConfig controller;
  DmaConfig dma;
  ResidencyConfig residency;
  // The config uses the chip template's keys beyond TPU v1's (cores, matrix-unit count,
  // residency, dma, launch overhead, no host link): reports then carry `arch.chip`.
  bool chip_template = false;
  EnergyConfig energy;  // energy:, resolved to technology_nm and vdd_v (energy_config.h)
  // Weight and activation transfers cost nothing: weight memory and PCIe take no time and
  // the unified buffer's ports do not pace the array or the vector unit (bytes are still
  // counted). For comparing compute cycles with analytical tools (docs/validation.md §6).
  bool ideal_memory = false;

  double clock_hz() const { return clock_mhz * 1e6; }
  // Cores a program runs on: all of them in megacore mode, else one.
  int64_t active_cores() const { return megacore ? cores : 1; }
  // Matrix units a program's tiles are spread over.
  int64_t active_matrix_units() const { return active_cores() * array.count; }
  // Peak tera-ops per second (2 ops per MAC) at a precision pair, over the matrix units a
  // program runs on: units * rows * cols * mode rate * 2 * clock_hz / 1e12. Throws
  // InputError if the array has no such mode.
  double peak_tops(Dtype a, Dtype b) const;
  // At the array's reference mode (int8 x int8 where it has one: ArrayConfig::reference_mode).
  double peak_tops() const;
};

// Loads and validates; throws InputError ("file:line:col: key.path: what is wrong").
ArchConfig load_arch_config(const std::filesystem::path& path);
ArchConfig parse_arch_config(const YamlNode& root);

}  // namespace tessera
