#pragma once
// Helpers the unit modules share: their queue depth and the counters of their logs.
#include <cstddef>
#include <string>

#include "models/common/stats.h"
#include "models/units/unit_context.h"

namespace tessera::models {

inline int unit_queue_depth(const UnitContext& ctx) { return static_cast<int>(ctx.controller.queue_depth); }

// One "<kind>_cycles" counter per declared kind of `log`.
template <typename Kind, std::size_t N>
void add_kind_cycles(StatGroup& stats, const IntervalLog& log, const KindNames<Kind, N>& names, const std::string& what) {
  for (const auto& [kind, name] : names) {
    stats.add(std::string(name) + "_cycles", "cycles", what + ": " + std::string(name),
              [&log, k = static_cast<int32_t>(kind)] { return log.total(k); });
  }
}

}  // namespace tessera::models
