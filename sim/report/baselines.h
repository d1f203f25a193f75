#pragma once
// CPU/GPU baselines next to the accelerator (DESIGN.md §6-7): the modelled parts of
// configs/baselines/*.yaml and the measured `host` baseline, each applied to the
// layers of the compiled program, as the report's "baselines" array.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "models/baseline/host_blas.h"
#include "models/baseline/model.h"
#include "sim/report/report.h"

namespace tessera::report {

// Stems of configs/baselines/*.yaml in `dir`, sorted ("a100", "h100-sxm", ...).
std::vector<std::string> available_baselines(const std::filesystem::path& dir);

// Where baseline names are looked up when no directory is given: $TESSERA_BASELINES_DIR if set,
// else data_path("configs/baselines") (./, the install prefix, or the source tree).
std::filesystem::path default_baselines_dir();

struct BaselineOptions {
  std::filesystem::path dir;        // empty: default_baselines_dir()
  baseline::HostOptions host;       // for `host`
};

// One object per requested baseline, in the order given. `names` entries:
//   a file stem under the baselines directory ("k80"), optionally with a precision
//   override ("a100:fp16"); "all" (every spec in the directory, sorted); "host" (the
//   measured baseline); or a path to a spec file ("my/cpu.yaml"). Duplicates are dropped.
// An unknown name throws InputError listing the available ones.
// Each object: name, display_name, kind, measured, precision, peak and memory figures, summary
// (latency_s, inferences_per_s, tops, utilization, ...), speedup_of_accelerator (baseline latency /
// accelerator latency), roofline (same shape as the report's "roofline"), layers.
nlohmann::ordered_json baselines_json(const std::vector<std::string>& names, const RunRecord& run,
                                      const nlohmann::ordered_json& accelerator_report);
nlohmann::ordered_json baselines_json(const std::vector<std::string>& names, const RunRecord& run,
                                      const nlohmann::ordered_json& accelerator_report, const BaselineOptions& options);

// Splits "a,b , c" into names (for a comma-separated --baseline option); empty items are dropped.
std::vector<std::string> split_baseline_list(const std::string& list);

// What the baselines need from a run, independent of the accelerator it was compiled for.
baseline::Workload baseline_workload(const graph::Graph& graph, const compiler::Program& program);

// A Markdown section ("## Baselines" and a table) and a console block for a report whose
// "baselines" array is filled; empty strings when it is empty.
std::string baselines_markdown(const nlohmann::ordered_json& report);
std::string baselines_console(const nlohmann::ordered_json& report);

}  // namespace tessera::report
