#pragma once
// Runs design points: each one is `tessera run` in its own child process (one SystemC
// elaboration per process), with its generated config under DIR/points/<id>/.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/sweep/experiment.h"
#include "sim/sweep/results.h"

namespace tessera::sweep {

// One design point as the fork server gets it. The child runs in the sweep directory.
struct PointJob {
  const Experiment& experiment;
  const Point& point;
  // The `tessera run` command line a standalone run of the point would get (argv[0] first):
  // --arch points/<id>/config.yaml, --workload, --batch, --out points/<id>, -q, then the
  // point's own options (run_arguments).
  std::vector<std::string> args;
  std::string config_path;  // points/<id>/config.yaml, relative to the sweep directory
  bool keep_reports = false;  // write report.json, layers.csv, summary.md into points/<id>/
  bool share_programs = true;  // points that differ only in keys the compiler does not read run one program
};

// Runs points in forked children of the sweep process instead of executing a new `tessera`
// per point (issue 19 item 5: no exec, no dynamic loading, no re-import per point). Set by
// the executables (sim/cli/sweep_point.h), which own the run pipeline.
//  - prepare() runs in the sweep process before each fork and may do work the children then
//    share copy-on-write: the workload import, and the compiled program of the points that
//    share it (issue 35 item 3).
//  - run() runs in the child: it simulates the point with the config `experiment.config_yaml`
//    gives (the file is written only when reports are kept, or by the sweep when the point
//    failed, so that its error names a file that is there), puts the report in `report` and
//    returns the exit code `tessera run` would have, having printed what it would print. Unless
//    reports are kept, `report` need hold only the parts of report.json the metrics read. It
//    returns nullopt for a point it cannot run in process (options only the `tessera run`
//    command line knows): the child then executes `tessera run` with `args`.
// Each child still elaborates SystemC once: the sweep process itself never does.
struct InProcessRunner {
  std::function<void(const PointJob& job)> prepare;
  std::function<std::optional<int>(const PointJob& job, nlohmann::ordered_json& report)> run;
  std::function<size_t()> programs_compiled;  // by prepare() in this process, for DIR/sweep.log
};

// How long a finished row may stay in the page cache before results.jsonl is fsync'd: rows
// are synced in groups, not one fsync each (issue 35). A killed process loses nothing either
// way (the rows are written before they count as done); a machine crash loses at most this.
inline constexpr double kDefaultSyncIntervalS = 1.0;

struct RunSettings {
  std::filesystem::path out_dir;     // absolute
  std::filesystem::path runner_exe;  // the `tessera` executable that runs one point
  const InProcessRunner* in_process = nullptr;  // set: fork without exec (runner_exe unused)
  int jobs = 1;                      // concurrent child processes
  double timeout_s = 0;              // per point; 0 = none
  bool keep_reports = true;          // false: an ok point leaves its row only (in process; otherwise deleted)
  bool share_programs = true;        // in process: points that differ only in keys the compiler does not read share a program
  double sync_interval_s = kDefaultSyncIntervalS;  // results.jsonl fsync'd at most this long after a row
  // --mpi: how long rank 0 waits for a point it handed to another rank (and, at the end, for
  // a rank to ask for more work) before it records the point as failed and gives up on the
  // rank: a stopped or wedged rank (NFS hang, a swapped-out node) must not stall the sweep.
  double rank_timeout_s = 0;
};

// The default of --rank-timeout: the per-point timeout plus a margin when there is one, else
// an hour (far above any shipped point; a wedged rank is caught within the hour).
inline constexpr double kRankTimeoutMarginS = 60;
inline constexpr double kDefaultRankTimeoutS = 3600;

// Up to `jobs` concurrent `tessera run` children.
class LocalPool {
 public:
  LocalPool(const Experiment& e, RunSettings settings);
  ~LocalPool();  // kills what is still running
  LocalPool(const LocalPool&) = delete;
  LocalPool& operator=(const LocalPool&) = delete;

  int capacity() const { return settings_.jobs; }
  size_t running() const { return children_.size(); }
  bool has_room() const { return static_cast<int>(children_.size()) < settings_.jobs; }
  // Prepares DIR/points/<id>/config.yaml and starts the child.
  void start(const Point& p);
  // Waits up to timeout_ms for children to finish; returns the rows of those that did.
  std::vector<Row> poll(int timeout_ms);
  void kill_all();

 private:
  struct Child {
    pid_t pid = -1;
    int fd = -1;  // read end of the child's stdout+stderr
    int row_fd = -1;  // in process: read end of the pipe the child sends its row on
    std::string row;  // what came on it
    const Point* point = nullptr;
    std::string output;
    bool eof = false;
    bool timed_out = false;
    std::chrono::steady_clock::time_point started;
  };
  Row finish(Child& c, int wait_status);
  void write_config(const Point& p) const;  // points/<id>/config.yaml

  const Experiment& e_;
  RunSettings settings_;
  std::vector<Child> children_;
  std::deque<Row> ready_;  // rows finished without a child (preparation failed)
};

// "12/40 done, 1 failed, 3.1 points/s, ETA 0:09" on stderr, rate-limited.
class Progress {
 public:
  Progress(std::string name, size_t total, size_t already_done, bool quiet);
  void add(const Row& row);
  void finish(const std::filesystem::path& out_dir);
  size_t failed() const { return failed_; }
  size_t environment_failed() const { return environment_failed_; }

 private:
  void print(bool force);
  std::string name_;
  size_t total_, done_, session_done_ = 0, failed_ = 0, environment_failed_ = 0;
  bool quiet_, tty_;
  std::string first_error_;
  std::chrono::steady_clock::time_point start_, last_print_;
};

// A line in DIR/sweep.log (timestamps live there, never in results).
void log_line(const std::filesystem::path& out_dir, const std::string& text);

// CPU time of this process and of its reaped children, for DIR/sweep.log: at the end, and
// every kCpuLogPoints points a local sweep has run.
std::string cpu_usage_text();
inline constexpr size_t kCpuLogPoints = 1000;

// The absolute path of the running executable (/proc/self/exe).
std::filesystem::path self_exe();

// Set by SIGINT/SIGTERM while a sweep runs; runners stop starting points and kill children.
bool interrupted();
void install_interrupt_handlers();

// Exit code of a sweep that finished but has points that failed for reasons of the
// environment (out of disk or memory, killed from outside, a stalled MPI rank): their rows
// are recorded and `--resume` runs them again.
inline constexpr int kExitEnvironmentFailures = 3;

// Releases the heap's free memory to the system before the first fork (runners call it once).
void compact_heap_before_forking();

// The local runner: all pending points of `e`, `settings.jobs` at a time; returns the exit code.
int run_local(const Experiment& e, const RunSettings& settings, ResultStore& store, bool quiet);

}  // namespace tessera::sweep
