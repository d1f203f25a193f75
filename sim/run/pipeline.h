#pragma once
// The run pipeline (docs/architecture.md): config + workload -> precision -> compile ->
// simulate -> report (+ baselines, functional) -> one set of output files. The CLI only
// parses options into these requests; the stages themselves stay in their own libraries.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/common/atomic_file.h"
#include "sim/compiler/compiled.h"
#include "sim/config/arch_config.h"
#include "sim/engine/engine.h"
#include "sim/functional/functional.h"
#include "sim/graph/graph.h"
#include "sim/report/report.h"

namespace tessera::run {

// What `tessera compile` and `tessera run` share: the inputs of one compiled workload.
struct CompileRequest {
  std::string arch;      // architecture config (YAML)
  std::string workload;  // a YAML graph or an ONNX model (*.onnx)
  int64_t batch = 0;     // 0: the workload's own batch
  std::string precision;                  // --precision: a policy name or a policy YAML file; empty: the workload's dtypes, else int8
  std::vector<std::string> input_shapes;  // ONNX only: NAME=d0,d1,...
  std::vector<std::string> input_values;  // ONNX only: NAME=v0,v1,... (inputs bound by value)
  std::vector<std::string> batch_axes;    // ONNX only: NAME=AXIS
  bool expanded_program = false;          // --expanded-program: no repeats (compiler::CompileOptions::compact)
  bool ideal_memory = false;              // --ideal-memory: the config's ideal_memory set to true
  std::string residency;                  // --residency: host | device | inputs=...,weights=...,outputs=... ("": the config's)
};

// Which precision ran and why (docs/precision.md, "Which precision runs").
struct PrecisionRan {
  std::string name = "int8";  // workload.precision in report.json
  std::string label;          // "bf16 (from the workload)": the summaries' precision line
  std::string note;           // stderr lines when --precision overrides what the workload declares; else empty
};

// A workload loaded, its precision policy applied and compiled for an architecture.
struct CompiledRun {
  ArchConfig arch;
  graph::Graph graph;
  compiler::Program program;
  PrecisionRan precision;
};

// What binds an ONNX model's inputs, as the command line gives it: --input-shape NAME=d0,d1,...
// (dynamic dimensions), --input-value NAME=v0,... (inputs bound by value, so conditions on
// them fold), --batch-axis NAME=AXIS. Each is refused for a YAML graph.
struct WorkloadBindings {
  std::vector<std::string> input_shapes, input_values, batch_axes;
};

// A YAML graph or an ONNX model; `input_shapes` (NAME=d0,d1,...) bind an ONNX model's
// dynamic dimensions and are refused for a YAML graph.
graph::Graph load_workload(const std::string& workload, const std::vector<std::string>& input_shapes = {});
graph::Graph load_workload(const std::string& workload, const WorkloadBindings& bindings);

// Imports a workload once and keeps it for this process: load_workload with the same path
// and bindings then returns a copy of it instead of importing again. For `tessera sweep`'s
// fork server (issue 19 item 5): the sweep process preloads, its forked point processes
// share the graph. Throws what load_workload throws (nothing is kept then).
void preload_workload(const std::string& workload, const WorkloadBindings& bindings);

// Applies the precision policy named by `precision` (empty: the dtypes the workload declares,
// else int8) to `graph`. A policy with an sqnr rule first measures every layer in functional
// mode (which is why it needs `arch`).
PrecisionRan apply_precision(graph::Graph& graph, const ArchConfig& arch, const std::string& precision);

// Loads the config and the workload, applies the precision policy, compiles.
CompiledRun compile(const CompileRequest& request);
// The same with the config already loaded (`request.arch` is not read): a sweep point's,
// parsed from the text the sweep generated.
CompiledRun compile(const CompileRequest& request, ArchConfig arch);

// Simulates a compiled program on `arch` and builds its report (`parts` of it): `tessera run`
// without baselines, functional mode or a trace. `arch` may differ from the config `program`
// was compiled for in keys the compiler does not read (sim/compiler/config_keys.h) only.
nlohmann::ordered_json simulate_report(const ArchConfig& arch, const graph::Graph& graph,
                                       const compiler::Program& program, const std::string& precision,
                                       const report::ReportParts& parts = {});

struct RunRequest {
  CompileRequest inputs;
  std::string out_dir;            // report.json, layers.csv, summary.md go here
  std::string baselines;          // --baseline's comma-separated list; empty: none
  std::optional<functional::FunctionalOptions> functional;  // set: also run functional mode
  std::string trace_file;         // empty: no trace
};

struct RunResult {
  CompiledRun compiled;
  engine::RunStats stats;
  nlohmann::ordered_json report;
  std::string functional_line;  // functional mode's one-line summary; empty without it
  // The trace (first, when asked for) and the report files, rendered and checked: write
  // them with write_outputs so they appear as one set or not at all.
  std::vector<OutputFile> outputs;
};

// Compiles, simulates (once per process: SystemC elaborates once), builds the report and
// renders every output. Writes nothing but the output directory itself.
RunResult run(const RunRequest& request);

// All outputs of a run, or none: every file that was there before is kept on failure.
void write_outputs(const RunResult& result);

// What `tessera run` prints unless --quiet.
std::string console_text(const RunResult& result, const RunRequest& request);

// An output that names one of the run's inputs (a --trace given the config's path by
// mistake) would destroy it: InputError before anything is written.
void refuse_overwriting_inputs(const std::vector<OutputFile>& outputs, const CompileRequest& inputs);

}  // namespace tessera::run
