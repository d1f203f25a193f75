// The `tessera` executable: wiring only. Each stage is a library:
// config + workload -> graph -> compiler -> program -> engine -> stats -> report.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>
#include <vector>

#include "sim/common/atomic_file.h"
#include "sim/common/error.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "sim/engine/engine.h"
#include "sim/functional/functional.h"
#include "sim/graph/graph.h"
#include "sim/graph/onnx_importer.h"
#include "sim/precision/precision.h"
#include "sim/report/baselines.h"
#include "sim/report/report.h"
#include "sim/report/trace.h"
#include "sim/sweep/cli.h"

namespace {

struct CommonOptions {
  std::string arch;
  std::string workload;
  int64_t batch = 0;
  std::string precision = "int8";
  std::vector<std::string> input_shapes;  // ONNX only: NAME=d0,d1,...
};

void add_common(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--arch,-a", o.arch, "Architecture config (YAML), e.g. configs/tpu-v1.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd.add_option("--workload,-w", o.workload,
                 "Workload: a YAML graph (docs/workloads.md), e.g. workloads/tpu/mlp0.yaml, or an ONNX model (*.onnx)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd.add_option("--batch,-b", o.batch, "Batch size (default: the workload's own batch)")->check(CLI::Range(1, 1 << 24));
  cmd.add_option("--input-shape", o.input_shapes,
                 "ONNX input shape NAME=d0,d1,... binding dynamic dimensions; the first dimension is the batch. "
                 "Repeat for several inputs, e.g. --input-shape input_ids=1,128")
      ->type_name("NAME=DIMS");
  cmd.add_option("--precision,-p", o.precision,
                 "Precision policy: int8 (default), int16, fp16, bf16, first-last-int16, or a policy YAML file "
                 "(docs/precision.md)");
}

tessera::graph::Graph load_workload(const CommonOptions& o) {
  if (tessera::graph::is_onnx_path(o.workload)) {
    tessera::graph::OnnxOptions onnx;
    for (const auto& text : o.input_shapes) {
      auto [name, dims] = tessera::graph::parse_input_shape(text);
      if (!onnx.input_shapes.emplace(name, dims).second) {
        throw tessera::InputError("--input-shape " + name + " is given more than once");
      }
    }
    return tessera::graph::load_onnx(o.workload, onnx);
  }
  if (!o.input_shapes.empty()) {
    throw tessera::InputError("--input-shape applies to ONNX models only; '" + o.workload + "' is a YAML graph");
  }
  return tessera::graph::load_graph_yaml(o.workload);
}

tessera::compiler::Program build_program(const CommonOptions& o, tessera::ArchConfig& arch, tessera::graph::Graph& graph) {
  arch = tessera::load_arch_config(o.arch);
  graph = load_workload(o);
  const auto policy = tessera::precision::parse_policy(o.precision);
  std::vector<std::string> low_sqnr;
  if (policy.sqnr_below_db) {
    // The sqnr rule measures each layer's error with everything else as the policy
    // says (the low layers at int8) in functional mode, then promotes those below.
    tessera::graph::Graph probe = graph;
    tessera::precision::apply(probe, tessera::precision::assign(probe, policy), policy.defaults.activations);
    const auto measured = tessera::functional::run_functional(probe, arch, {});
    for (const auto& l : measured.layers) {
      if (l.sqnr_db < *policy.sqnr_below_db) low_sqnr.push_back(l.name);
    }
  }
  tessera::precision::apply(graph, tessera::precision::assign(graph, policy, low_sqnr), policy.defaults.activations);
  return tessera::compiler::compile(graph, arch, {.batch = o.batch});
}

// An output that names one of the run's inputs (a --trace given the config's path by
// mistake) would destroy it: refused before anything is written.
void refuse_overwriting_inputs(const std::vector<tessera::OutputFile>& outputs, const CommonOptions& o) {
  const std::pair<const char*, std::string> inputs[] = {
      {"--arch", o.arch}, {"--workload", o.workload}, {"--precision", o.precision}};
  for (const auto& out : outputs) {
    for (const auto& [flag, in] : inputs) {
      std::error_code ec;
      if (!in.empty() && std::filesystem::equivalent(out.path, in, ec) && !ec) {
        throw tessera::InputError(out.path.string() + ": is the " + std::string(flag) +
                                  " input of this run; refusing to overwrite it with an output");
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  CLI::App app{
      "Tessera: a cycle-approximate simulator of DNN accelerators (TPU-v1-class systolic arrays on SystemC).\n\n"
      "Examples:\n"
      "  tessera run --arch configs/tpu-v1.yaml --workload workloads/tpu/mlp0.yaml --out out/mlp0\n"
      "  tessera compile --arch configs/tpu-v1.yaml --workload workloads/tpu/cnn0.yaml --batch 1\n\n"
      "Exit codes: 0 success, 2 bad input (config, workload, command line), 1 internal error.",
      "tessera"};
  app.set_version_flag("--version", "tessera 0.1.0");
  app.require_subcommand(1);

  CommonOptions run_opts;
  std::string out_dir;
  bool quiet = false;
  auto* run = app.add_subcommand("run", "Compile a workload for an architecture, simulate it, and write the report");
  add_common(*run, run_opts);
  run->add_option("--out,-o", out_dir, "Output directory for report.json, layers.csv and summary.md")->required();
  run->add_flag("--quiet,-q", quiet, "Do not print the summary on stdout");
  std::string baseline_list, trace_file;
  run->add_option("--baseline", baseline_list,
                  "Compare against CPU/GPU baselines, comma-separated: names of configs/baselines/*.yaml (haswell-e5-2699v3, k80, "
                  "xeon-8480, epyc-9654, a100, h100-sxm, h200), NAME:PRECISION (a100:fp16), a spec file path, 'host' "
                  "(this machine's CPU, measured with OpenBLAS) or 'all' (every spec). docs/baselines.md")
      ->type_name("LIST");
  run->add_option("--trace", trace_file,
                  "Write a Chrome/Perfetto timeline (trace-event JSON, one track per unit) to FILE; open it in "
                  "ui.perfetto.dev or chrome://tracing")
      ->type_name("FILE");
  bool functional = false, per_channel = false, pe_reference = false;
  int64_t functional_batch = 1, functional_calibration = 4, accumulator_headroom_bits = 2;
  auto* functional_flag = run->add_flag("--functional", functional,
      "Also compute every layer numerically at the assigned precision and report its error against an fp32 "
      "reference (report.json \"functional\"; docs/precision-functional.md)");
  run->add_option("--functional-batch", functional_batch, "Samples --functional computes (default 1)")
      ->check(CLI::Range(1, 1 << 16))->needs(functional_flag);
  run->add_option("--functional-calibration", functional_calibration,
                  "Calibration batches for --functional's activation scales (default 4; 0: the evaluated batch)")
      ->check(CLI::Range(0, 1 << 16))->needs(functional_flag);
  run->add_option("--accumulator-headroom-bits", accumulator_headroom_bits,
                  "With --functional: bits the calibrated pre-activation range stays below accumulator saturation "
                  "(default 2; -1 keeps full-scale weight scales, which int16 x int16 on 32-bit accumulators overflows)")
      ->check(CLI::Range(-1, 16))->needs(functional_flag);
  run->add_flag("--per-channel", per_channel, "With --functional: per-output-channel weight scales")->needs(functional_flag);
  run->add_flag("--pe-reference", pe_reference,
                "With --functional: matrix layers through the cycle-exact PE-level reference (arrays up to 32x32; slow)")
      ->needs(functional_flag);
  run->footer(
      "Writes DIR/report.json (arch, workload, summary, layers, roofline, baselines), DIR/layers.csv and\n"
      "DIR/summary.md. The cycle breakdown array_active, weight_shift, weight_stall, input_stall, raw_stall,\n"
      "non_matrix, pcie sums to the total cycles. Same inputs give byte-identical files.");

  CommonOptions compile_opts;
  std::string listing_file;
  auto* compile = app.add_subcommand("compile", "Print the accelerator program the compiler emits for a workload");
  add_common(*compile, compile_opts);
  compile->add_option("--output,-o", listing_file, "Write the listing to this file instead of stdout");

  tessera::sweep::SweepOptions sweep_opts;
  auto* sweep = tessera::sweep::add_sweep_command(app, sweep_opts);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  try {
    if (*sweep) return tessera::sweep::run_sweep_command(sweep_opts, argc, argv);
    tessera::ArchConfig arch;
    tessera::graph::Graph graph;
    if (*compile) {
      const auto program = build_program(compile_opts, arch, graph);
      if (listing_file.empty()) {
        std::cout << program.listing();
      } else {
        const std::vector<tessera::OutputFile> outputs{{listing_file, program.listing(), true}};
        refuse_overwriting_inputs(outputs, compile_opts);
        tessera::write_files_atomically(outputs);
      }
      return 0;
    }
    const auto program = build_program(run_opts, arch, graph);
    const auto stats = tessera::engine::simulate(arch, program);
    const tessera::report::RunRecord record{arch, graph, program, stats, run_opts.precision};
    auto report = tessera::report::build_report(record);
    if (!baseline_list.empty()) {
      const auto names = tessera::report::split_baseline_list(baseline_list);
      if (names.empty()) throw tessera::InputError("--baseline: no baseline named in '" + baseline_list + "'");
      report["baselines"] = tessera::report::baselines_json(names, record, report);
    }
    std::string functional_line;
    if (functional) {
      tessera::functional::FunctionalOptions fo;
      fo.batch = functional_batch;
      fo.calibration_batches = functional_calibration;
      fo.per_channel = per_channel;
      fo.accumulator_headroom_bits = static_cast<int>(accumulator_headroom_bits);
      fo.use_pe_reference = pe_reference;
      const auto fr = tessera::functional::run_functional(graph, arch, fo);
      report["functional"] = tessera::functional::to_json(fr);
      functional_line = tessera::functional::summary_line(fr);
    }
    // Render the trace and check where it goes before writing anything: no partial set of outputs.
    std::string trace_json;
    if (!trace_file.empty()) {
      const auto parent = std::filesystem::absolute(trace_file).parent_path();
      if (!std::filesystem::is_directory(parent)) {
        throw tessera::InputError("--trace " + trace_file + ": directory " + parent.string() + " does not exist");
      }
      trace_json = tessera::report::chrome_trace_json(stats, program, arch.clock_mhz);
    }
    // The trace and the report files are one set: all of them appear, or none does and
    // every file that was there before (an earlier trace, earlier reports) is kept.
    auto outputs = tessera::report::report_files(out_dir, report);
    if (!trace_file.empty()) outputs.insert(outputs.begin(), tessera::OutputFile{trace_file, trace_json, true});
    refuse_overwriting_inputs(outputs, run_opts);
    tessera::write_files_atomically(outputs);
    if (!quiet) {
      std::cout << tessera::report::console_summary(report) << tessera::report::baselines_console(report);
      if (!functional_line.empty()) std::cout << "  " << functional_line << "\n";
      std::cout << "  report: " << out_dir << "/report.json\n";
    }
    return 0;
  } catch (const tessera::InputError& e) {
    std::cerr << "tessera: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // The stages check their size estimates first; an input too big for this machine
    // that still gets here is named as such, not reported as a bug.
    std::cerr << "tessera: error: out of memory: this workload (at this batch, or with --functional at this "
                 "--functional-batch) needs more memory than this process may use; use a smaller batch or workload\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tessera: internal error: " << e.what() << "\n";
    return 1;
  }
}
