#include "sim/serve/llm/targets.h"

#include <stdexcept>

namespace tessera::serve::llm {

std::unique_ptr<ServingTarget> make_serving_target(const TargetRequest&) {
  throw std::runtime_error("make_serving_target: not built yet (branch llm-cost)");
}

}  // namespace tessera::serve::llm
