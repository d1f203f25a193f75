// The weight-memory factory: one line per model.
#include <stdexcept>
#include <string>

#include "models/memory/hbm.h"
#include "models/memory/simple_dram.h"
#include "models/memory/weight_memory_model.h"

namespace tessera::models {

std::unique_ptr<WeightMemoryModel> make_weight_memory(sc_core::sc_module_name name, const WeightMemoryConfig& cfg,
                                                      const CoreClock& clock) {
  for (const WeightMemoryTechnology& t : kWeightMemoryTechnologies) {
    if (t.technology != cfg.technology) continue;
    if (t.model == "simple_dram") return std::make_unique<SimpleDram>(name, cfg, clock);
    if (t.model == "hbm") return std::make_unique<HbmPseudoChannels>(name, cfg, clock);
    throw std::logic_error("weight memory model '" + std::string(t.model) + "' has no factory line");
  }
  throw std::invalid_argument("weight_memory.technology '" + cfg.technology + "' has no model");
}

}  // namespace tessera::models
