#pragma once
// The files of `tessera serve` (docs/serving.md "Outputs"): serving.json (everything),
// serving.csv (one row per platform, batch and policy), curve.csv (the latency-throughput
// curves, analysis/plot_serving.py draws them) and serving.md (a summary for people). The
// same inputs and seed give byte-identical files.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "sim/serve/study.h"

namespace tessera::serve {

// What the study was given, as the user wrote it (paths as given, so that the files do not
// depend on the directory the command ran in).
struct ServeInputs {
  std::string arch_file;
  std::string arch_name;
  std::string workload_file;
  std::string precision = "int8";
  std::vector<std::string> input_shapes;
  std::string host_file;             // "" : no host model
  std::string host_scale_source;     // "file", "--host-scale", "calibrated"
  double host_scale_flag = 1;        // --host-scale
  std::string trace_file;            // "" : no trace
  std::vector<std::string> baselines;
};

nlohmann::ordered_json serving_json(const ServeInputs& in, const StudySpec& spec, const ServiceTables& tables,
                                    const StudyResult& result);
std::string serving_csv(const StudySpec& spec, const ServiceTables& tables, const StudyResult& result);
std::string curve_csv(const ServiceTables& tables, const StudyResult& result);
std::string serving_markdown(const ServeInputs& in, const StudySpec& spec, const ServiceTables& tables,
                             const StudyResult& result);
// What `tessera serve` prints unless --quiet: the headline and where the files are.
std::string serving_console(const ServeInputs& in, const StudySpec& spec, const ServiceTables& tables,
                            const StudyResult& result);

}  // namespace tessera::serve
