#pragma once
// The TPU paper's Table 3 (Jouppi et al., ISCA 2017, "Factors limiting TPU performance of
// the NN workload based on hardware performance counters"), rows 1-9, from Tessera's
// counters, so a run can be set beside the paper's column row by row (docs/validation.md,
// "Table 3 from Tessera's counters"). Rows 1, 4, 5 and 6 sum to 100% of the cycles; rows 2
// and 3 split row 1; rows 7 and 8 are parts of row 6, as in the paper.
#include <nlohmann/json.hpp>

#include <string>

#include "sim/config/arch_config.h"
#include "sim/engine/engine.h"

namespace tessera::report {

// report.json's `table3`: {source, total_cycles, array_pes, rows: [{row, label, value, unit,
// count, count_unit} x 9]} (row 9 has no count). `tops` and `peak_tops` are the summary's.
nlohmann::ordered_json tpu_paper_view_json(const ArchConfig& arch, const engine::RunStats& stats, double tops, double peak_tops);

// summary.md's "Table 3 view" section ("" for a report without `table3`).
std::string tpu_paper_view_markdown(const nlohmann::ordered_json& report);

}  // namespace tessera::report
