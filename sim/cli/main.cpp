// The `tessera` executable: wiring only. Each stage is a library:
// config + workload -> graph -> compiler -> program -> engine -> stats -> report.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "sim/common/atomic_file.h"
#include "sim/common/exit_code.h"
#include "sim/cli/sweep_point.h"
#include "sim/compiler/compiler.h"
#include "sim/report/energy_report.h"
#include "sim/report/report_schema.h"
#include "sim/run/pipeline.h"
#include "sim/serve/cli.h"
#include "sim/serve/llm/cost_table.h"
#include "sim/serve/llm/llm_cli.h"
#include "sim/sweep/cli.h"

namespace {

void add_common(CLI::App& cmd, tessera::run::CompileRequest& o) {
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
  cmd.add_option("--input-value", o.input_values,
                 "Bind an ONNX input to a value NAME=V (a scalar) or NAME=v0,v1,... so that control flow and shapes "
                 "computed from it fold at import time (an If on a sample rate, a Loop count). Repeatable, e.g. "
                 "--input-value sr=16000")
      ->type_name("NAME=VALUE");
  cmd.add_option("--batch-axis", o.batch_axes,
                 "The batch axis of an ONNX input NAME=AXIS, overriding the inference from its use (e.g. a recurrent "
                 "state [layers, batch, hidden]: --batch-axis state=1). Repeatable")
      ->type_name("NAME=AXIS");
  cmd.add_option("--precision,-p", o.precision,
                 "Precision policy: int8, int16, fp16, bf16, first-last-int16, or a policy YAML file "
                 "(docs/precision.md). Default: the dtypes the workload declares (a YAML graph's dtype keys), else "
                 "int8; given, it overrides them and a note on stderr says what it changed");
  cmd.add_option("--residency", o.residency,
                 "Where graph inputs and outputs live, overriding the config's residency: section: 'host' (they "
                 "cross the host link, TPU v1's coprocessor shape), 'device' (already in device memory, as a JAX or "
                 "PyTorch kernel timing measures), or per class of inputs, weights, outputs, e.g. "
                 "inputs=device,outputs=host or weights=host (the weight fetchers then read weights over the host "
                 "link) (docs/configs.md)")
      ->type_name("WHERE");
  cmd.add_flag("--expanded-program", o.expanded_program,
               "Store every instruction of the program on its own instead of folding repeated patterns into "
               "repeats (the compact program): the same instructions, timing and reports, more memory; for checking");
}

int tessera_cli(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) { return tessera_cli(argc, argv); }

namespace {

int tessera_cli(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  CLI::App app{
      "Tessera: a cycle-approximate simulator of DNN accelerators (TPU-v1-class systolic arrays on SystemC).\n\n"
      "Examples:\n"
      "  tessera run --arch configs/tpu-v1.yaml --workload workloads/tpu/mlp0.yaml --out out/mlp0\n"
      "  tessera compile --arch configs/tpu-v1.yaml --workload workloads/tpu/cnn0.yaml --batch 1\n"
      "  tessera serve --arch configs/tpu-v1.yaml --workload workloads/tpu/mlp0.yaml --latency-bound-ms 7 --out out/serve\n"
      "  tessera serve-llm --arch configs/tpu-v6e.yaml --model workloads/llm/llama-3-8b.yaml --rate 2 --out out/llm\n\n"
      "Exit codes: 0 success, 2 bad input (config, workload, command line), 1 internal error.",
      "tessera"};
  app.set_version_flag("--version", "tessera 0.1.0");
  app.require_subcommand(1);

  tessera::run::RunRequest run_request;
  auto& run_opts = run_request.inputs;
  std::string& out_dir = run_request.out_dir;
  bool quiet = false;
  auto* run = app.add_subcommand("run", "Compile a workload for an architecture, simulate it, and write the report");
  add_common(*run, run_opts);
  run->add_option("--out,-o", out_dir, "Output directory for report.json, layers.csv and summary.md")->required();
  run->add_flag("--quiet,-q", quiet, "Do not print the summary on stdout");
  std::string& baseline_list = run_request.baselines;
  std::string& trace_file = run_request.trace_file;
  run->add_option("--baseline", baseline_list,
                  "Compare against CPU/GPU baselines, comma-separated: names of configs/baselines/*.yaml (haswell-e5-2699v3, k80, "
                  "xeon-8480, epyc-9654, a100, h100-sxm, h200), NAME:PRECISION (a100:fp16), a spec file path, 'host' "
                  "(this machine's CPU, measured with OpenBLAS) or 'all' (every spec). docs/baselines.md")
      ->type_name("LIST");
  run->add_option("--trace", trace_file,
                  "Write a Chrome/Perfetto timeline (trace-event JSON, one track per unit) to FILE; open it in "
                  "ui.perfetto.dev or chrome://tracing")
      ->type_name("FILE");
  run->add_flag("--ideal-memory", run_request.inputs.ideal_memory,
                "Weight and activation transfers cost nothing: weight memory and PCIe take no time and the unified "
                "buffer's ports do not pace the array or the vector unit (bytes are still counted), so the cycles are "
                "compute alone, comparable with analytical tools (the config key ideal_memory: true; docs/validation.md)");
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
      "Writes DIR/report.json (arch, workload, summary, layers, roofline, table3, baselines), DIR/layers.csv\n"
      "and DIR/summary.md. The cycle breakdown array_active, weight_shift, weight_stall, input_stall, raw_stall,\n"
      "non_matrix, pcie sums to the total cycles; table3 is the TPU paper's Table 3, rows 1-9, from the counters.\n"
      "Same inputs give byte-identical files.");

  tessera::run::CompileRequest compile_opts;
  std::string listing_file;
  auto* compile = app.add_subcommand("compile", "Print the accelerator program the compiler emits for a workload");
  add_common(*compile, compile_opts);
  compile->add_option("--output,-o", listing_file, "Write the listing to this file instead of stdout");
  bool expand_listing = false;
  compile->add_flag("--expand", expand_listing,
                    "List every instruction of the expanded program, one per line, instead of the compact form "
                    "(repeated patterns as `repeat N { ... }` with each template's stride per iteration)");

  tessera::sweep::SweepOptions sweep_opts;
  auto* sweep = tessera::sweep::add_sweep_command(app, sweep_opts);
  sweep_opts.in_process = &tessera::cli::sweep_point_runner();  // fork server (sim/cli/sweep_point.h)
  sweep_opts.report_paths = [](const std::string& config) {
    return tessera::report::report_paths(tessera::load_arch_config(config));
  };

  tessera::serve::ServeOptions serve_opts;
  auto* serve = tessera::serve::add_serve_command(app, serve_opts);
  tessera::serve::llm::ServeLlmOptions serve_llm_opts;
  auto* serve_llm = tessera::serve::llm::add_serve_llm_command(app, serve_llm_opts);
  // The LLM cost table costs decode batches in the compiler's passes; serving does not include
  // the compiler (DESIGN.md §2), so it is wired here.
  tessera::serve::llm::set_pass_planner(&tessera::compiler::samples_per_pass);

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

  return tessera::exit_code_of([&] {
    if (*sweep) return tessera::sweep::run_sweep_command(sweep_opts, argc, argv);
    if (*serve) return tessera::serve::run_serve_command(serve_opts);
    if (*serve_llm) return tessera::serve::llm::run_serve_llm_command(serve_llm_opts);
    if (*compile) {
      const auto compiled = tessera::run::compile(compile_opts);
      if (!compiled.precision.note.empty()) std::cerr << compiled.precision.note << "\n";
      const std::string listing = expand_listing ? compiled.program.listing() : compiled.program.compact_listing();
      if (listing_file.empty()) {
        std::cout << listing;
      } else {
        const std::vector<tessera::OutputFile> outputs{{listing_file, listing, true}};
        tessera::run::refuse_overwriting_inputs(outputs, compile_opts);
        tessera::write_files_atomically(outputs);
      }
      return 0;
    }
    if (functional) {
      tessera::functional::FunctionalOptions fo;
      fo.batch = functional_batch;
      fo.calibration_batches = functional_calibration;
      fo.per_channel = per_channel;
      fo.accumulator_headroom_bits = static_cast<int>(accumulator_headroom_bits);
      fo.use_pe_reference = pe_reference;
      run_request.functional = fo;
    }
    const auto result = tessera::run::run(run_request);
    if (!result.compiled.precision.note.empty()) std::cerr << result.compiled.precision.note << "\n";
    std::cerr << tessera::report::energy_defaults_warning(result.report);
    tessera::run::write_outputs(result);
    if (!quiet) std::cout << tessera::run::console_text(result, run_request);
    return 0;
  });
}

}  // namespace
