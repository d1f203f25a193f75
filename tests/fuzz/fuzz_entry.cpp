#include "tests/fuzz/fuzz_entry.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <stdexcept>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "models/baseline/spec.h"
#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"
#include "sim/graph/onnx_importer.h"
#include "sim/serve/host_config.h"
#include "sim/serve/trace.h"
#include "sim/sweep/experiment.h"

#ifndef TESSERA_SOURCE_DIR
#error "TESSERA_SOURCE_DIR must name the source tree (experiments resolve base configs from it)"
#endif

namespace tessera::fuzz {
namespace {

namespace fs = std::filesystem;

std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// ONNX models are read from a path (external data resolves next to it): one file per
// process, rewritten for every input. Next to it lies a sparse 4 GiB `weights.bin` of
// zeros: the seed models (run_fuzzers.sh) keep their weights there, so inputs get past
// the external-data checks into shape inference.
fs::path scratch_dir() { return fs::temp_directory_path() / ("tessera-fuzz-" + std::to_string(::getpid())); }

const fs::path& onnx_scratch() {
  static const fs::path path = [] {
    const fs::path dir = scratch_dir();
    fs::create_directories(dir);
    { std::ofstream(dir / "weights.bin", std::ios::binary | std::ios::app); }
    fs::resize_file(dir / "weights.bin", uint64_t{4} << 30);
    return dir / "model.onnx";
  }();
  return path;
}

void run_onnx(const uint8_t* data, size_t size) {
  const fs::path& path = onnx_scratch();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) throw std::runtime_error("fuzz harness: cannot write " + path.string());
  }
  graph::load_onnx(path);
}

}  // namespace

const std::vector<std::string>& targets() {
  static const std::vector<std::string> names = {"arch_config", "graph_yaml", "experiment",    "onnx",
                                                  "serve_trace", "host_config", "baseline_spec"};
  return names;
}

void remove_scratch() {
  std::error_code ec;
  fs::remove_all(scratch_dir(), ec);
}

bool run_input(std::string_view target, const uint8_t* data, size_t size) {
  try {
    if (target == "arch_config") {
      parse_arch_config(YamlNode::load_string(text_of(data, size), "fuzz.yaml"));
    } else if (target == "graph_yaml") {
      graph::parse_graph_yaml(YamlNode::load_string(text_of(data, size), "fuzz.yaml"));
    } else if (target == "experiment") {
      // Relative paths resolve as for a file in experiments/ (base: ../configs/tpu-v1.yaml).
      const fs::path dir = fs::path(TESSERA_SOURCE_DIR) / "experiments";
      sweep::parse_experiment(YamlNode::load_string(text_of(data, size), (dir / "fuzz.yaml").string()), dir);
    } else if (target == "onnx") {
      run_onnx(data, size);
    } else if (target == "serve_trace") {
      // The reader's promise (issue 34): accepted arrivals are finite, in [0, 1e9] s and never decrease.
      const serve::Trace tr = serve::parse_trace_csv(text_of(data, size), "fuzz.csv");
      for (size_t i = 0; i < tr.arrival_s.size(); ++i) {
        const double t = tr.arrival_s[i];
        if (!std::isfinite(t) || t < 0 || t > serve::kMaxTraceArrivalS || (i > 0 && t < tr.arrival_s[i - 1]) ||
            tr.size[i] < 1 || tr.size[i] > serve::kMaxRequestSamples) {
          throw std::logic_error("fuzz harness: the trace reader accepted arrival " + std::to_string(i));
        }
      }
    } else if (target == "host_config") {
      serve::parse_host_model(YamlNode::load_string(text_of(data, size), "fuzz-host.yaml"));
    } else if (target == "baseline_spec") {
      baseline::parse_baseline_spec(YamlNode::load_string(text_of(data, size), "fuzz-baseline.yaml"), "fuzz-baseline");
    } else {
      throw std::invalid_argument("fuzz harness: unknown target '" + std::string(target) + "'");
    }
    return true;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace tessera::fuzz
