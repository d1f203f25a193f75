// tessera-mpi: the MPI runner of `tessera sweep --mpi` (Boost.MPI over OpenMPI); its main()
// is sim/cli/mpi_main.cpp, which hands in the fork server (sim/cli/sweep_point.h): each rank
// runs its points in forked children as a local sweep does, the workload imported once per
// rank (issue 35 item 4).
// `tessera sweep EXP --mpi` re-executes itself as this program, so
//   mpirun -n 8 build/tessera sweep experiments/tpu-bandwidth.yaml --mpi
// works without linking MPI into `tessera`. Running build/tessera-mpi sweep ... directly works too.
//
// Protocol: every rank expands the experiment itself (deterministic). Rank 0 holds the result
// files and the list of pending points; each rank, rank 0 included, runs up to -j points at a
// time. A rank with a free slot sends kRequest; rank 0 answers kAssign with a point index, or
// -1 when none is left. A finished point comes back as kResult with its JSONL row, which rank 0
// appends. Same files and resume semantics as the local runner.
#include <boost/mpi.hpp>
#include <boost/serialization/string.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "sim/common/error.h"
#include "sim/common/exit_code.h"
#include "sim/sweep/cli.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/results.h"
#include "sim/sweep/metric_check.h"
#include "sim/sweep/mpi_runner.h"
#include "sim/sweep/runner.h"

namespace mpi = boost::mpi;

namespace tessera::sweep {
namespace {

enum Tag : int { kRequest = 1, kAssign = 2, kResult = 3 };

int coordinator(mpi::communicator& world, const Experiment& e, const RunSettings& s, const SweepOptions& o,
                ResultStore& store) {
  using Clock = std::chrono::steady_clock;
  std::vector<const Point*> pending;
  for (const auto& p : e.points) {
    if (!store.done().count(p.id)) pending.push_back(&p);
  }
  const size_t already = e.points.size() - pending.size();
  if (!o.quiet) {
    std::cerr << "sweep " << e.name << ": " << e.points.size() << " points";
    if (already) std::cerr << " (" << already << " already done)";
    std::cerr << ", MPI: " << world.size() << " ranks x " << s.jobs << " at a time, in " << s.out_dir.string() << "\n";
    if (store.dropped_torn()) {
      std::cerr << "sweep " << e.name << ": dropped " << store.dropped_torn()
                << " incomplete line(s) of results.jsonl (a killed write); those points run again\n";
    }
    if (store.retried_environment()) {
      std::cerr << "sweep " << e.name << ": " << store.retried_environment()
                << " point(s) that failed for reasons of the environment run again\n";
    }
  }
  log_line(s.out_dir, "start: MPI runner, " + std::to_string(world.size()) + " ranks x " + std::to_string(s.jobs) +
                          " jobs, " + std::to_string(pending.size()) + " points to run");
  Progress progress(e.name, e.points.size(), already, o.quiet);
  FailureTally failures;
  LocalPool pool(e, s);
  size_t next = 0;
  // Points handed to other ranks, not yet back: index -> (rank, when). Each has a deadline
  // (--rank-timeout): a stopped or wedged rank would otherwise stall the sweep forever.
  struct Assignment {
    int rank = 0;
    Clock::time_point since;
  };
  std::map<size_t, Assignment> outstanding;
  std::set<int> stopped;  // ranks told there is nothing left
  std::set<int> stalled;  // ranks that missed a deadline: no longer waited for
  const auto deadline = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.rank_timeout_s));
  Clock::time_point all_assigned;  // when the last point went out (ranks then have rank_timeout_s to stop)
  bool all_assigned_set = false;
  auto record = [&](const Row& row) {
    store.append(row);
    progress.add(row);
    failures.add(row);
  };
  store.sync_if_due();
  auto give_up_on = [&](int rank, const std::string& why) {
    if (!stalled.insert(rank).second) return;
    log_line(s.out_dir, "rank " + std::to_string(rank) + " stalled: " + why);
    std::cerr << "sweep " << e.name << ": MPI rank " << rank << " " << why
              << "; it is no longer waited for (its points are recorded as failed and run again with --resume)\n";
  };
  while (true) {
    while (pool.has_room() && next < pending.size()) pool.start(*pending[next++]);
    bool any = false;
    while (auto st = world.iprobe(mpi::any_source, mpi::any_tag)) {
      any = true;
      if (st->tag() == kRequest) {
        int unused = 0;
        world.recv(st->source(), kRequest, unused);
        int index = -1;
        if (next < pending.size() && !stalled.count(st->source())) {
          index = static_cast<int>(pending[next++]->index);
          outstanding[static_cast<size_t>(index)] = {st->source(), Clock::now()};
        } else {
          stopped.insert(st->source());
        }
        world.send(st->source(), kAssign, index);
      } else if (st->tag() == kResult) {
        std::string line;
        world.recv(st->source(), kResult, line);
        if (!line.empty() && line.back() == '\n') line.pop_back();
        auto row = row_from_jsonl(line);
        if (!row) throw std::runtime_error("rank " + std::to_string(st->source()) + " sent an unreadable row: " + line);
        auto it = outstanding.find(row->index);
        if (it == outstanding.end()) continue;  // late: already recorded as failed when its deadline passed
        outstanding.erase(it);
        record(*row);
      } else {
        throw std::runtime_error("unexpected MPI message tag " + std::to_string(st->tag()));
      }
    }
    for (const Row& row : pool.poll(any ? 0 : 5)) record(row);
    store.sync_if_due();
    const auto now = Clock::now();
    for (auto it = outstanding.begin(); it != outstanding.end();) {
      if (now - it->second.since < deadline) {
        ++it;
        continue;
      }
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", s.rank_timeout_s);
      const int rank = it->second.rank;
      give_up_on(rank, std::string("did not return a point within ") + secs + " s (--rank-timeout)");
      record(failed_row(e, e.points[it->first],
                        std::string(kRankTimeoutPrefix) + std::to_string(rank) + " within " + secs +
                            " s (--rank-timeout): the rank is stopped or its node hung; --resume runs the point again"));
      it = outstanding.erase(it);
    }
    if (next >= pending.size() && !all_assigned_set) {
      all_assigned = now;
      all_assigned_set = true;
    }
    // Every point is back (or given up on); ranks that never ask again are stalled too.
    if (next >= pending.size() && pool.running() == 0 && outstanding.empty()) {
      bool waiting = false;
      for (int r = 1; r < world.size(); ++r) {
        if (stopped.count(r) || stalled.count(r)) continue;
        if (now - all_assigned < deadline) {
          waiting = true;
        } else {
          give_up_on(r, "did not ask for work within --rank-timeout after the last point was handed out");
        }
      }
      if (!waiting) break;
    }
  }
  store.sync();
  log_line(s.out_dir, "done (rank 0); " + cpu_usage_text());
  progress.finish(s.out_dir);
  if (!stalled.empty()) {
    // A stalled rank would block MPI_Finalize: end the job (mpirun stops every rank). The
    // results are complete on disk: results.jsonl was just fsync'd.
    std::cerr << "sweep " << e.name << ": ending the MPI job because of " << stalled.size()
              << " stalled rank(s); rerun with --resume to run their points again\n";
    std::cerr.flush();
    world.abort(kExitEnvironmentFailures);
  }
  const int code = sweep_exit_code(progress.failed(), progress.environment_failed());
  std::cerr << failures.summary(e.name, e.points.size(), code);  // even with -q: the exit code alone says too little
  return code;
}

int worker(mpi::communicator& world, const Experiment& e, const RunSettings& s) {
  LocalPool pool(e, s);
  bool stopped = false;
  while (!stopped || pool.running() > 0) {
    while (!stopped && pool.has_room()) {
      world.send(0, kRequest, 0);
      int index = -1;
      world.recv(0, kAssign, index);
      if (index < 0 || static_cast<size_t>(index) >= e.points.size()) {
        stopped = true;
      } else {
        pool.start(e.points[static_cast<size_t>(index)]);
      }
    }
    for (const Row& row : pool.poll(50)) world.send(0, kResult, row_to_jsonl(row));
  }
  return 0;
}

int run_mpi(const Experiment& e, const RunSettings& s, const SweepOptions& o) {
  mpi::communicator world;
  std::unique_ptr<ResultStore> store;
  int code = 0;
  std::string error;
  if (world.rank() == 0) {
    try {
      store = std::make_unique<ResultStore>(e, s.out_dir, o.resume, o.retry_failed, s.sync_interval_s);
    } catch (const InputError& err) {
      code = 2;
      error = err.what();
    } catch (const std::exception& err) {
      code = 1;
      error = err.what();
    }
  }
  // Everyone learns whether rank 0 could open the results before anyone asks for work.
  mpi::broadcast(world, code, 0);
  if (code != 0) {
    if (world.rank() == 0) std::cerr << "tessera: " << (code == 2 ? "error: " : "internal error: ") << error << "\n";
    return code;
  }
  compact_heap_before_forking();
  try {
    return world.rank() == 0 ? coordinator(world, e, s, o, *store) : worker(world, e, s);
  } catch (const InputError& err) {
    // A bad output directory found mid-sweep (a planted link where a point's files go) is the
    // user's input, as in a local sweep: one located message and exit 2 from every rank.
    std::cerr << "tessera: error: " << err.what() << "\n";
    std::cerr.flush();
    world.abort(2);
  } catch (const std::exception& err) {
    std::cerr << "tessera-mpi: rank " << world.rank() << ": " << err.what() << "\n";
    world.abort(1);
  }
  return 1;
}

}  // namespace

int mpi_sweep_main(int argc, char** argv, const InProcessRunner* in_process) {
  mpi::environment env(argc, argv);
  CLI::App app{"tessera-mpi: the MPI runner of `tessera sweep --mpi` (docs/experiments.md)", "tessera-mpi"};
  app.require_subcommand(1);
  SweepOptions o;
  add_sweep_command(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  o.mpi = true;
  o.in_process = in_process;
  return exit_code_of([&] { return run_sweep_command(o, argc, argv, &run_mpi); });
}

}  // namespace tessera::sweep
