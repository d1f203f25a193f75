#pragma once
// Energy, power and area in the report (docs/energy.md): the run's activity from the
// units' counters, each layer's from its instructions (the same definition,
// models/units/activity.h), the energy model (sim/energy) on both, and the report's keys
// and Markdown/console text.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "sim/compiler/compiled.h"
#include "sim/config/arch_config.h"
#include "sim/energy/energy.h"
#include "sim/engine/engine.h"

namespace tessera::report {

// The run's activity, read from every module's counters (RunStats::counters) by name.
energy::Activity activity_from_counters(const engine::RunStats& stats);

// Each layer's activity from its instructions; `host_io` gets the instructions of no layer.
std::vector<energy::Activity> layer_activities(const compiler::Program& program, const ArchConfig& arch,
                                               energy::Activity& host_io);

nlohmann::ordered_json breakdown_json(const energy::Breakdown& b);

// arch.energy: node, supply, the resolved coefficients, which keys were defaulted and where
// each group's values came from.
nlohmann::ordered_json energy_arch_json(const ArchConfig& arch);

// The run-level keys (added to `summary`): energy_j, energy_per_inference_j, inferences_per_j,
// power_w, chip_power_w, tops_per_w, energy_breakdown_j, host_io_energy_j, power_vs_load,
// perf_per_w, area_mm2, area_breakdown_mm2.
void add_energy_summary(nlohmann::ordered_json& summary, const ArchConfig& arch, const energy::Breakdown& run,
                        const energy::Breakdown& host_io, double latency_s, int64_t batch, double tops);

// summary.md's "Energy and area" section and the console's energy line ("" for a report
// without energy keys).
std::string energy_markdown(const nlohmann::ordered_json& report);
std::string energy_console(const nlohmann::ordered_json& report);
// What `tessera run` says on stderr when energy figures are defaults (issue 33): a warning when
// the config has no energy: section, else a note listing arch.energy.defaulted; empty when
// nothing is defaulted.
std::string energy_defaults_warning(const nlohmann::ordered_json& report);

}  // namespace tessera::report
