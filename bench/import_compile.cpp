// Import + compile time of the ONNX workloads (docs/performance-onnx.md).
//   build/bench/bench_import_compile [--repeat N] [--arch configs/tpu-v1.yaml] [--dir build/workloads/onnx] [MODEL...]
// For each model: the median and minimum wall time of load_onnx() and of compile() over N
// runs (after one warm-up run that also brings the file into the page cache), the median
// CPU time of compile() and the instructions it compiles per CPU second (issue 19).
// The Llama-2-7B cases are skipped unless their model was generated (docs/performance.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "sim/run/pipeline.h"

using namespace tessera;
using Clock = std::chrono::steady_clock;

namespace {

struct Model {
  std::string name;
  std::vector<std::string> input_shapes;  // --input-shape's NAME=d0,d1,...
  std::string file;                       // <file>.onnx; empty: the name
};

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 20;
  std::string arch_path = std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml";
  std::string dir = std::string(TESSERA_BINARY_DIR) + "/workloads/onnx";
  std::vector<std::string> wanted;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--arch" && i + 1 < argc) arch_path = argv[++i];
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else wanted.push_back(a);
  }
  const std::vector<Model> all = {{"resnet50", {}, ""},
                                  {"bert_base", {"input_ids=1,128"}, ""},
                                  {"mobilenet_v2", {}, ""},
                                  {"gpt2_prefill", {"input_ids=1,128"}, ""},
                                  {"gpt2_decode", {"sequence=1", "past=128"}, ""},
                                  {"lstm_seq2seq", {}, ""},
                                  {"llama2_7b_512", {"input_ids=1,512"}, "../llama/llama2_7b_prefill"},
                                  {"llama2_7b_2048", {"input_ids=1,2048"}, "../llama/llama2_7b_prefill"}};
  try {
    const ArchConfig arch = load_arch_config(arch_path);
    std::printf("| model | layers | instructions | import ms (median / min) | compile ms (median / min) | compile CPU ms (median)"
                " | instructions / compile CPU s | total ms (median) |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    for (const Model& m : all) {
      if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), m.name) == wanted.end()) continue;
      const std::filesystem::path file = std::filesystem::path(dir) / ((m.file.empty() ? m.name : m.file) + ".onnx");
      if (!m.file.empty() && !std::filesystem::exists(file)) {
        if (!wanted.empty()) std::fprintf(stderr, "bench_import_compile: %s: not generated, skipped\n", file.c_str());
        continue;
      }
      std::vector<double> imp, comp, comp_cpu, total;
      size_t layers = 0, instructions = 0;
      for (int r = 0; r <= repeat; ++r) {
        const auto t0 = Clock::now();
        const graph::Graph g = run::load_workload(file.string(), m.input_shapes);
        const auto t1 = Clock::now();
        const double c1 = cpu_ms();
        const compiler::Program p = compiler::compile(g, arch);
        const double c2 = cpu_ms();
        const auto t2 = Clock::now();
        layers = g.layers.size();
        instructions = p.instructions.size();
        if (r == 0) continue;  // warm-up
        imp.push_back(ms(t0, t1));
        comp.push_back(ms(t1, t2));
        comp_cpu.push_back(c2 - c1);
        total.push_back(ms(t0, t2));
      }
      const double cpu = median(comp_cpu);
      std::printf("| %s | %zu | %zu | %.1f / %.1f | %.1f / %.1f | %.1f | %.3g | %.1f |\n", m.name.c_str(), layers, instructions,
                  median(imp), *std::min_element(imp.begin(), imp.end()), median(comp),
                  *std::min_element(comp.begin(), comp.end()), cpu,
                  cpu > 0 ? static_cast<double>(instructions) / (cpu * 1e-3) : 0.0, median(total));
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "bench_import_compile: %s\n", e.what());
    return 2;
  }
  return 0;
}
