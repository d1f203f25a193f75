#pragma once
// Shared by the engine tests: compile a YAML graph for a config and simulate it (once per
// process: one SystemC elaboration), and check that a run's cycle breakdown sums.
#include <gtest/gtest.h>

#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/engine/engine.h"

namespace tessera::test_support {

inline engine::RunStats simulate_graph(const ArchConfig& arch, const std::string& graph_yaml,
                                       const engine::SimulateOptions& options = {}) {
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(graph_yaml, "g.yaml"));
  const compiler::Program p = compiler::compile(g, arch);
  return engine::simulate(arch, p, options);
}

// Every cycle in one bucket: the buckets sum to the total, over the run and over its layers.
inline void expect_breakdown_sums(const engine::RunStats& s) {
  EXPECT_EQ(s.cycles.total(), s.total_cycles);
  engine::CycleBreakdown sum = s.host_io;
  for (const auto& l : s.layers) sum += l.cycles;
  EXPECT_EQ(sum.total(), s.total_cycles);
}

}  // namespace tessera::test_support
