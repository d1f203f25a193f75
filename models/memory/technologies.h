#pragma once
// Which weight-memory model stands for each value of the config's `technology:`.
// Plain data, no SystemC: the config loader checks the key against it, and
// make_weight_memory() (registry.cpp) builds the model it names.
#include <array>
#include <string_view>

namespace tessera::models {

struct WeightMemoryTechnology {
  std::string_view technology;  // the config's `technology:` value
  std::string_view model;       // the implementation (registry.cpp)
};

inline constexpr std::array<WeightMemoryTechnology, 11> kWeightMemoryTechnologies = {{
    {"DRAM", "simple_dram"},  // the default: a generic DRAM
    {"DDR3", "simple_dram"},
    {"DDR4", "simple_dram"},
    {"DDR5", "simple_dram"},
    {"LPDDR4", "simple_dram"},
    {"LPDDR4X", "simple_dram"},
    {"LPDDR5", "simple_dram"},
    {"GDDR6", "simple_dram"},
    {"HBM2", "simple_dram"},   // legacy mode: 8 independent 128-bit channels, evenly interleaved
    {"HBM2E", "simple_dram"},
    {"HBM2-PC", "hbm"},        // pseudo-channel mode: 2 x 64-bit pseudo channels per channel (hbm.h)
}};

}  // namespace tessera::models
