// Component benchmarks (Google Benchmark) of the stages before and around the simulation:
// config and graph loading, ONNX import, compilation, the array's tile timing, the report.
// The SystemC simulation itself can run once per process, so it is timed whole-process by
// bench/time_apps.py instead. Figures: docs/performance.md.
//   build/bench/bench_components [--benchmark_repetitions=5 --benchmark_report_aggregates_only=true]
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/array/systolic_timing.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"
#include "sim/run/pipeline.h"

using namespace tessera;

namespace {

const std::string kSrc = TESSERA_SOURCE_DIR;
const std::string kOnnx = std::string(TESSERA_BINARY_DIR) + "/workloads/onnx";

graph::Graph onnx_model(const std::string& name) {
  const std::vector<std::string> shapes = name == "bert_base" ? std::vector<std::string>{"input_ids=1,128"}
                                                               : std::vector<std::string>{};
  return run::load_workload(kOnnx + "/" + name + ".onnx", shapes);
}

void BM_LoadArchConfig(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(load_arch_config(kSrc + "/configs/tpu-v1.yaml"));
}
BENCHMARK(BM_LoadArchConfig)->Unit(benchmark::kMicrosecond);

void BM_LoadGraphYaml_Cnn1(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(graph::load_graph_yaml(kSrc + "/workloads/tpu/cnn1.yaml"));
}
BENCHMARK(BM_LoadGraphYaml_Cnn1)->Unit(benchmark::kMicrosecond);

void BM_ImportOnnx(benchmark::State& state, const char* name) {
  if (!std::filesystem::exists(kOnnx + "/" + name + ".onnx")) {
    state.SkipWithError("ONNX workloads not generated (build the onnx_workloads target)");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(onnx_model(name));
}
BENCHMARK_CAPTURE(BM_ImportOnnx, resnet50, "resnet50")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ImportOnnx, bert_base, "bert_base")->Unit(benchmark::kMillisecond);

void BM_CompileOnnx(benchmark::State& state, const char* name) {
  if (!std::filesystem::exists(kOnnx + "/" + name + ".onnx")) {
    state.SkipWithError("ONNX workloads not generated (build the onnx_workloads target)");
    return;
  }
  const ArchConfig arch = load_arch_config(kSrc + "/configs/tpu-v1.yaml");
  const graph::Graph g = onnx_model(name);
  size_t instructions = 0;
  for (auto _ : state) {
    const compiler::Program p = compiler::compile(g, arch);
    instructions = p.instructions.size();
    benchmark::DoNotOptimize(instructions);
  }
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["instructions_per_s"] =
      benchmark::Counter(static_cast<double>(instructions), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_CompileOnnx, resnet50, "resnet50")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CompileOnnx, bert_base, "bert_base")->Unit(benchmark::kMillisecond);

void BM_CompileYaml_Cnn1(benchmark::State& state) {
  const ArchConfig arch = load_arch_config(kSrc + "/configs/tpu-v1.yaml");
  const graph::Graph g = graph::load_graph_yaml(kSrc + "/workloads/tpu/cnn1.yaml");
  for (auto _ : state) benchmark::DoNotOptimize(compiler::compile(g, arch));
}
BENCHMARK(BM_CompileYaml_Cnn1)->Unit(benchmark::kMillisecond);

// The fast array model's per-tile cost: what the matrix unit pays per matmul instruction.
void BM_TileTiming(benchmark::State& state) {
  const array::ArrayDims dims{256, 256};
  int64_t m = 1, sum = 0;
  for (auto _ : state) {
    for (const auto df : {array::Dataflow::kWeightStationary, array::Dataflow::kOutputStationary,
                          array::Dataflow::kInputStationary}) {
      sum += array::tile_timing(df, dims, {m, 256, 256}).total();
    }
    m = m % 256 + 1;  // within the array for every dataflow (os, is: m <= 256)
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations() * 3);
}
BENCHMARK(BM_TileTiming);

}  // namespace

BENCHMARK_MAIN();
