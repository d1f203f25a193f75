#pragma once
// The `tessera sweep` subcommand, shared by `tessera` and `tessera-mpi`.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace tessera::sweep {

struct Experiment;
struct RunSettings;
struct InProcessRunner;

struct SweepOptions {
  std::string experiment;
  int jobs = 0;  // 0: all cores (local), 1 per rank (--mpi)
  std::string out;
  bool resume = false;
  bool retry_failed = false;
  bool mpi = false;
  bool summarize = false;
  bool list = false;
  bool quiet = false;
  bool keep_reports = false;   // --keep-reports: every point's report files, whatever the experiment says
  bool no_shared_programs = false;  // --no-shared-programs: every point compiles its own program (for checking)
  double sync_interval_s = -1;  // --sync-interval; < 0: kDefaultSyncIntervalS
  double timeout_s = 0;
  double rank_timeout_s = 0;  // --mpi: 0 = the default (kDefaultRankTimeout... in runner.h)
  std::string pareto;
  // Local sweeps run their points in forked children through this (runner.h); null: each
  // point executes `tessera run`.
  const InProcessRunner* in_process = nullptr;
  // The report.json paths of a run on the given config (report::report_paths, wired by the
  // CLI: the sweep does not know how reports are built). Set: every metric path is checked
  // against them before the first point runs (metric_check.h).
  std::function<std::vector<std::string>(const std::string& config)> report_paths;
};

// Registers `sweep` on `app` and returns it.
CLI::App* add_sweep_command(CLI::App& app, SweepOptions& o);

// The MPI runner (tessera-mpi only): rank 0 hands out points and writes the results.
using MpiRunner = int (*)(const Experiment& e, const RunSettings& s, const SweepOptions& o);

// Runs the parsed command; returns the exit code. Throws InputError on bad input (exit 2).
// In `tessera`, --mpi re-executes the process as the sibling `tessera-mpi` (same pid and
// arguments, so mpirun/srun see the same process); there `mpi` is the MPI runner.
int run_sweep_command(const SweepOptions& o, int argc, char** argv, MpiRunner mpi = nullptr);

}  // namespace tessera::sweep
