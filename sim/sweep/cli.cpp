#include "sim/sweep/cli.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "sim/common/error.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/metric_check.h"
#include "sim/sweep/results.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/summary.h"
#include "sim/sweep/sweep_files.h"

namespace fs = std::filesystem;

namespace tessera::sweep {

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& o) {
  auto* cmd = app.add_subcommand("sweep", "Run every design point of an experiment file (experiments/*.yaml)");
  cmd->add_option("experiment", o.experiment, "Experiment file, e.g. experiments/tpu-bandwidth.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--jobs,-j", o.jobs, "Points run at a time (default: all cores; with --mpi: per rank, default 1)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--out,-o", o.out, "Output directory (default: the experiment's out:, else out/sweeps/<name>)");
  cmd->add_flag("--resume", o.resume, "Continue a sweep in --out: skip finished points, redo unfinished ones");
  cmd->add_flag("--retry-failed", o.retry_failed, "With --resume: run failed points again (their rows are replaced)");
  cmd->add_flag("--mpi", o.mpi, "Run under mpirun/srun: rank 0 hands out points and writes the results");
  cmd->add_flag("--summarize", o.summarize, "Do not run: print counts and Pareto fronts of the results in --out");
  cmd->add_option("--pareto", o.pareto, "With --summarize: axes as name:min|max,... (default: the experiment's pareto:)");
  cmd->add_flag("--list", o.list, "Do not run: print the design points as JSON lines on stdout");
  cmd->add_option("--timeout", o.timeout_s, "Seconds a point may run before it is killed and recorded as failed")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--rank-timeout", o.rank_timeout_s,
                  "With --mpi: seconds rank 0 waits for a point handed to another rank before it records the point "
                  "as failed (run again by --resume) and stops waiting for that rank (default: --timeout + 60, "
                  "else 3600)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet,-q", o.quiet, "No progress on stderr");
  cmd->add_flag("--keep-reports", o.keep_reports,
                "Keep every point's report.json, layers.csv and summary.md in DIR/points/<id>/ (the experiment key "
                "keep_reports: true does the same); by default an ok point leaves only its results row");
  cmd->add_flag("--no-shared-programs", o.no_shared_programs,
                "Compile every point's program itself instead of sharing one between points that differ only in "
                "config keys the compiler does not read (same results; for checking)");
  cmd->add_option("--sync-interval", o.sync_interval_s,
                  "Seconds a finished row may wait before results.jsonl is fsync'd (rows are synced in groups; "
                  "default 1; 0: after every row). A killed sweep loses no finished row either way")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->footer(
      "Each point runs as `tessera run` would, in its own process; its config and reports are kept in\n"
      "DIR/points/<id>/ with --keep-reports (a failed point keeps its config).\n"
      "Rows stream to DIR/results.jsonl and DIR/results.csv (one complete line per point); a killed sweep\n"
      "continues with --resume and ends with every point exactly once. MPI: mpirun -n N tessera sweep EXP --mpi.\n"
      "Metric paths are checked against report.json's before the first point runs (exit 2, naming the closest).\n"
      "Exit codes: 0 every point ran; 2 bad input (experiment, metric path, command line); 3 some points failed\n"
      "for reasons of the environment (rerun with --resume); 4 some points failed (their errors are summarized\n"
      "on stderr with counts, in full in results.jsonl); 130 interrupted.\n"
      "Format and examples: docs/experiments.md.");
  cmd->get_option("--summarize")->excludes("--list");
  cmd->get_option("--retry-failed")->needs("--resume");
  return cmd;
}

namespace {

fs::path out_dir_for(const SweepOptions& o, const Experiment& e) {
  std::string dir = !o.out.empty() ? o.out : !e.out.empty() ? e.out : "out/sweeps/" + e.name;
  return fs::absolute(dir).lexically_normal();
}

[[noreturn]] void exec_mpi_runner(int argc, char** argv) {
  const fs::path self = self_exe();
  const fs::path mpi = self.parent_path() / "tessera-mpi";
  if (::access(mpi.c_str(), X_OK) != 0) {
    throw InputError("--mpi needs " + mpi.string() +
                     ", which is built when Boost.MPI and OpenMPI are installed (Debian: libboost-mpi-dev openmpi-bin); "
                     "install them and rebuild");
  }
  // Same pid, same arguments: the MPI launcher sees the process it started.
  ::setenv("TESSERA_SWEEP_RUNNER", self.c_str(), 1);
  std::vector<char*> args(argv, argv + argc);
  std::string arg0 = mpi.string();
  args[0] = arg0.data();
  args.push_back(nullptr);
  ::execv(mpi.c_str(), args.data());
  throw std::runtime_error("cannot execute " + mpi.string() + ": " + std::strerror(errno));
}

}  // namespace

namespace {
// A metric the report lacks is exit 2 before any point runs, not a column of nulls after all
// of them (issue 33). A base config that does not load on its own is left to the points.
void check_metrics(const SweepOptions& o, const Experiment& e) {
  if (!o.report_paths) return;
  std::vector<std::string> known;
  try {
    known = o.report_paths(e.base_config.string());
  } catch (const InputError&) {
    return;
  }
  check_metric_paths(e, known);
}
}  // namespace

int run_sweep_command(const SweepOptions& o, int argc, char** argv, MpiRunner mpi) {
  if (o.mpi && !mpi && !o.summarize && !o.list) {
    check_metrics(o, load_experiment(o.experiment, {.build_dir = self_exe().parent_path()}));
    exec_mpi_runner(argc, argv);
  }

  // `${build}` in experiment paths: the directory of the running executable, which is the build
  // directory (tessera and tessera-mpi sit there, the ONNX workloads in its workloads/onnx).
  const Experiment e = load_experiment(o.experiment, {.build_dir = self_exe().parent_path()});
  const fs::path out = out_dir_for(o, e);

  if (o.list) {
    for (const auto& p : e.points) {
      nlohmann::ordered_json j;
      j["point"] = p.id;
      j["index"] = p.index;
      j["workload"] = p.workload;
      j["batch"] = p.batch;
      nlohmann::ordered_json params = nlohmann::ordered_json::object();
      for (const auto& [k, v] : e.params(p)) params[k] = v.json();
      j["params"] = params;
      std::cout << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    }
    std::cerr << "sweep " << e.name << ": " << e.points.size() << " points (" << e.stats.candidates << " candidates, "
              << e.stats.pruned << " pruned by constraints, " << e.stats.duplicates << " duplicates)\n";
    return 0;
  }

  if (o.summarize) {
    const fs::path jsonl = out / "results.jsonl";
    std::error_code ec;
    if (!fs::exists(jsonl, ec)) throw InputError(jsonl.string() + ": no results yet (run the sweep first, or pass --out)");
    const auto existing = read_results(jsonl);
    std::vector<ParetoAxis> axes = o.pareto.empty() ? e.pareto : parse_pareto_axes(o.pareto, e);
    if (axes.empty()) {
      throw InputError(e.file.string() + ": no Pareto axes: add `pareto: [summary.latency_s:min, <metric>:min]` to the "
                       "experiment or pass --pareto");
    }
    const std::string text = summarize(e, existing.rows, axes);
    std::cout << text;
    replace_file(out / "summary.md", text);
    return 0;
  }

  check_metrics(o, e);
  RunSettings s;
  s.out_dir = out;
  if (const char* runner = std::getenv("TESSERA_SWEEP_RUNNER"); mpi && runner && *runner) {
    s.runner_exe = runner;
  } else if (mpi) {
    s.runner_exe = self_exe().parent_path() / "tessera";
  } else {
    s.runner_exe = self_exe();
  }
  s.in_process = o.in_process;  // MPI ranks too (issue 35 item 4); runner_exe only for what it cannot run
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.jobs = o.jobs > 0 ? o.jobs : (mpi ? 1 : cores);
  s.timeout_s = o.timeout_s > 0 ? o.timeout_s : e.timeout_s;
  s.keep_reports = o.keep_reports || e.keep_reports;
  s.share_programs = !o.no_shared_programs;
  s.sync_interval_s = o.sync_interval_s >= 0 ? o.sync_interval_s : kDefaultSyncIntervalS;
  s.rank_timeout_s = o.rank_timeout_s > 0  ? o.rank_timeout_s
                     : s.timeout_s > 0     ? s.timeout_s + kRankTimeoutMarginS
                                           : kDefaultRankTimeoutS;

  if (mpi) return mpi(e, s, o);

  if (!o.quiet && (e.stats.pruned || e.stats.duplicates)) {
    std::cerr << "sweep " << e.name << ": " << e.stats.candidates << " candidates, " << e.stats.pruned
              << " pruned by constraints, " << e.stats.duplicates << " duplicates dropped\n";
  }
  install_interrupt_handlers();
  ResultStore store(e, out, o.resume, o.retry_failed, s.sync_interval_s);
  if (!o.quiet && store.dropped_torn()) {
    std::cerr << "sweep " << e.name << ": dropped " << store.dropped_torn()
              << " incomplete line(s) of results.jsonl (a killed write); those points run again\n";
  }
  if (!o.quiet && store.retried_environment()) {
    std::cerr << "sweep " << e.name << ": " << store.retried_environment()
              << " point(s) that failed for reasons of the environment run again\n";
  }
  if (!o.quiet && store.removed_temporaries()) {
    std::cerr << "sweep " << e.name << ": removed " << store.removed_temporaries()
              << " temporary file(s) left by a killed write\n";
  }
  if (!o.quiet && store.stale()) {
    std::cerr << "sweep " << e.name << ": " << store.stale()
              << " rows in results.jsonl belong to points no longer in the experiment (kept)\n";
  }
  return run_local(e, s, store, o.quiet);
}

}  // namespace tessera::sweep
