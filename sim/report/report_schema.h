#pragma once
// The paths a report.json has, for checking names before anything runs (`tessera sweep`'s
// metrics, issue 33 item 3). Derived from build_report itself, so it cannot drift from it.
#include <string>
#include <vector>

#include "sim/config/arch_config.h"

namespace tessera::report {

// Every leaf path (dotted) of a report of `arch`: those of a report built for an empty
// one-layer run on it, with list indices written "#" (layers.#.latency_s), followed by the
// subtrees whose keys depend on the run, written "PREFIX.*" (baselines.*, functional.*, ...).
std::vector<std::string> report_paths(const ArchConfig& arch);

}  // namespace tessera::report
