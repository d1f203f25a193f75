#include "sim/run/pipeline.h"

#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "sim/common/error.h"
#include "sim/common/finite_check.h"
#include "sim/common/output_dir.h"
#include "sim/compiler/compiler.h"
#include "sim/graph/onnx_importer.h"
#include "sim/precision/precision.h"
#include "sim/report/baselines.h"
#include "sim/report/report.h"
#include "sim/report/trace.h"

namespace tessera::run {

graph::Graph load_workload(const std::string& workload, const std::vector<std::string>& input_shapes) {
  return load_workload(workload, WorkloadBindings{input_shapes, {}, {}});
}

namespace {
using PreloadKey = std::tuple<std::string, std::vector<std::string>, std::vector<std::string>, std::vector<std::string>>;
std::map<PreloadKey, graph::Graph>& preloaded() {
  static std::map<PreloadKey, graph::Graph> graphs;
  return graphs;
}
PreloadKey preload_key(const std::string& workload, const WorkloadBindings& b) {
  return {workload, b.input_shapes, b.input_values, b.batch_axes};
}
graph::Graph import_workload(const std::string& workload, const WorkloadBindings& bindings);
}  // namespace

void preload_workload(const std::string& workload, const WorkloadBindings& bindings) {
  auto key = preload_key(workload, bindings);
  if (preloaded().count(key) == 0) preloaded().emplace(std::move(key), import_workload(workload, bindings));
}

graph::Graph load_workload(const std::string& workload, const WorkloadBindings& bindings) {
  if (!preloaded().empty()) {
    const auto it = preloaded().find(preload_key(workload, bindings));
    if (it != preloaded().end()) return it->second;
  }
  return import_workload(workload, bindings);
}

namespace {
graph::Graph import_workload(const std::string& workload, const WorkloadBindings& bindings) {
  if (graph::is_onnx_path(workload)) {
    graph::OnnxOptions onnx;
    for (const auto& text : bindings.input_shapes) {
      auto [name, dims] = graph::parse_input_shape(text);
      if (!onnx.input_shapes.emplace(name, dims).second) {
        throw InputError("--input-shape " + name + " is given more than once");
      }
    }
    for (const auto& text : bindings.input_values) {
      auto [name, values] = graph::parse_input_value(text);
      if (!onnx.input_values.emplace(name, values).second) {
        throw InputError("--input-value " + name + " is given more than once");
      }
    }
    for (const auto& text : bindings.batch_axes) {
      auto [name, axis] = graph::parse_batch_axis(text);
      if (!onnx.batch_axes.emplace(name, axis).second) throw InputError("--batch-axis " + name + " is given more than once");
    }
    return graph::load_onnx(workload, onnx);
  }
  const std::pair<const char*, const std::vector<std::string>*> flags[] = {
      {"--input-shape", &bindings.input_shapes}, {"--input-value", &bindings.input_values}, {"--batch-axis", &bindings.batch_axes}};
  for (const auto& [flag, given] : flags) {
    if (!given->empty()) {
      throw InputError(std::string(flag) + " applies to ONNX models only; '" + workload + "' is a YAML graph");
    }
  }
  return graph::load_graph_yaml(workload);
}
}  // namespace

PrecisionRan apply_precision(graph::Graph& graph, const ArchConfig& arch, const std::string& precision) {
  const precision::ChosenPolicy chosen = precision::choose_policy(graph, precision);
  const precision::PrecisionPolicy& policy = chosen.policy;
  PrecisionRan ran{chosen.name, chosen.label(), precision::override_note(graph, chosen)};
  std::vector<std::string> low_sqnr;
  if (policy.sqnr_below_db) {
    // The sqnr rule measures each layer's error with everything else as the policy
    // says (the low layers at int8) in functional mode, then promotes those below.
    graph::Graph probe = graph;
    precision::apply(probe, precision::assign(probe, policy), policy.defaults.activations);
    const auto measured = functional::run_functional(probe, arch, {});
    for (const auto& l : measured.layers) {
      if (l.sqnr_db < *policy.sqnr_below_db) low_sqnr.push_back(l.name);
    }
  }
  precision::apply(graph, precision::assign(graph, policy, low_sqnr), policy.defaults.activations);
  return ran;
}

CompiledRun compile(const CompileRequest& request) { return compile(request, load_arch_config(request.arch)); }

CompiledRun compile(const CompileRequest& request, ArchConfig arch) {
  CompiledRun c;
  c.arch = std::move(arch);
  if (request.ideal_memory) c.arch.ideal_memory = true;
  if (!request.residency.empty()) {
    apply_residency_override(c.arch.residency, request.residency);
    const ResidencyConfig& r = c.arch.residency;
    const bool host = r.inputs == Residency::kHost || r.weights == Residency::kHost || r.outputs == Residency::kHost;
    if (host && !c.arch.has_host_link) {
      throw InputError("--residency " + request.residency + ": '" + c.arch.name + "' (" + c.arch.source +
                       ") has no host link (no pcie: section), so nothing can live in host memory; allowed: device");
    }
    c.arch.chip_template = true;
  }
  c.graph = load_workload(request.workload, WorkloadBindings{request.input_shapes, request.input_values, request.batch_axes});
  c.precision = apply_precision(c.graph, c.arch, request.precision);
  c.program = compiler::compile(c.graph, c.arch, {.batch = request.batch, .compact = !request.expanded_program});
  return c;
}

void refuse_overwriting_inputs(const std::vector<OutputFile>& outputs, const CompileRequest& inputs) {
  const std::pair<const char*, std::string> named[] = {
      {"--arch", inputs.arch}, {"--workload", inputs.workload}, {"--precision", inputs.precision}};
  for (const auto& out : outputs) {
    for (const auto& [flag, in] : named) {
      std::error_code ec;
      if (!in.empty() && std::filesystem::equivalent(out.path, in, ec) && !ec) {
        throw InputError(out.path.string() + ": is the " + std::string(flag) +
                         " input of this run; refusing to overwrite it with an output");
      }
    }
  }
}

nlohmann::ordered_json simulate_report(const ArchConfig& arch, const graph::Graph& graph,
                                       const compiler::Program& program, const std::string& precision,
                                       const report::ReportParts& parts) {
  const engine::RunStats stats = engine::simulate(arch, program, {.tracks = false, .cycle_breakdown = parts.reads_cycle_breakdown()});
  return report::build_report(report::RunRecord{arch, graph, program, stats, precision}, parts);
}

RunResult run(const RunRequest& request) {
  RunResult r;
  if (!request.trace_file.empty()) {
    // An output over another output (--trace D/report.json with --out D), refused before
    // anything is simulated, naming both (issue 34 item 3); checked again on the rendered set.
    std::vector<OutputFile> targets = report::report_file_targets(request.out_dir);
    targets.insert(targets.begin(), OutputFile{request.trace_file, "", true, "--trace"});
    refuse_outputs_naming_one_file(targets);
  }
  r.compiled = compile(request.inputs);
  const ArchConfig& arch = r.compiled.arch;
  const compiler::Program& program = r.compiled.program;
  r.stats = engine::simulate(arch, program, {.tracks = !request.trace_file.empty()});
  const report::RunRecord record{arch, r.compiled.graph, program, r.stats, r.compiled.precision.name};
  r.report = report::build_report(record);
  if (!request.baselines.empty()) {
    const auto names = report::split_baseline_list(request.baselines);
    if (names.empty()) throw InputError("--baseline: no baseline named in '" + request.baselines + "'");
    r.report["baselines"] = report::baselines_json(names, record, r.report);
  }
  if (request.functional) {
    const auto fr = functional::run_functional(r.compiled.graph, arch, *request.functional);
    r.report["functional"] = functional::to_json(fr);
    r.functional_line = functional::summary_line(fr);
  }
  // The simulation checks its own figures: a NaN or an infinity is a bug, never a result (issue 34).
  require_finite("run: report.json", first_non_finite(r.report));
  // Render the trace and check where it goes before writing anything: no partial set of outputs.
  std::string trace_json;
  if (!request.trace_file.empty()) {
    prepare_output_file_directory(request.trace_file, "--trace");
    trace_json = report::chrome_trace_json(r.stats, program, arch.clock_mhz);
  }
  // The trace and the report files are one set: all of them appear, or none does and
  // every file that was there before (an earlier trace, earlier reports) is kept.
  r.outputs = report::report_files(request.out_dir, r.report, r.compiled.precision.label);
  if (!request.trace_file.empty()) r.outputs.insert(r.outputs.begin(), OutputFile{request.trace_file, trace_json, true, "--trace"});
  refuse_overwriting_inputs(r.outputs, request.inputs);
  refuse_outputs_naming_one_file(r.outputs);  // --trace D/report.json with --out D (issue 34 item 3)
  return r;
}

void write_outputs(const RunResult& result) { write_files_atomically(result.outputs); }

std::string console_text(const RunResult& result, const RunRequest& request) {
  std::ostringstream out;
  out << report::console_summary(result.report, result.compiled.precision.label) << report::baselines_console(result.report);
  if (!result.functional_line.empty()) out << "  " << result.functional_line << "\n";
  out << "  report: " << request.out_dir << "/report.json\n";
  return out.str();
}

}  // namespace tessera::run
