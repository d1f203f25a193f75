#include "sim/report/report_schema.h"

#include <set>

#include "sim/report/report.h"

namespace tessera::report {

namespace {

void leaves(const nlohmann::ordered_json& j, const std::string& prefix, std::set<std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) leaves(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array() && !j.empty()) {
    for (const auto& v : j) leaves(v, prefix + ".#", out);
  } else {
    out.insert(prefix);
  }
}

}  // namespace

std::vector<std::string> report_paths(const ArchConfig& arch) {
  // One matrix layer (macs > 0, so the roofline lists it too) that did nothing: build_report
  // writes every key it always writes, whatever the values.
  graph::Graph graph;
  compiler::Program program;
  program.batch = 1;
  compiler::LayerInfo layer;
  layer.name = "layer";
  layer.macs = 1;
  program.layers.push_back(layer);
  engine::RunStats stats;
  stats.clock_mhz = arch.clock_mhz;
  stats.total_cycles = 1;
  stats.layers.resize(1);
  const auto report = build_report({arch, graph, program, stats, "int8"});
  std::set<std::string> found;
  leaves(report, "", found);
  std::vector<std::string> paths(found.begin(), found.end());
  // Written only by some runs, or keyed by what the run had: --baseline's platforms,
  // --functional, a quantized model, work left to the host.
  for (const char* open : {"baselines.*", "functional.*", "workload.quantized_by_model.*", "workload.host_ops.*"}) {
    paths.emplace_back(open);
  }
  return paths;
}

}  // namespace tessera::report
