#pragma once
// A serving study (`tessera serve`, docs/serving.md): every platform (the accelerator and the
// baselines), at every batch size and batching policy asked for, served from the same host
// and request stream: the maximum throughput under a latency bound, the latency at a given
// rate, or an MLPerf Inference scenario; optionally the host calibrated first on one
// published row, and a latency-throughput curve. Plain C++ over the service tables that the
// SystemC runs filled (service_runs.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/serve/model.h"
#include "sim/serve/queue_sim.h"
#include "sim/serve/search.h"
#include "sim/serve/service_runs.h"

namespace tessera::serve {

enum class Scenario { kNone, kServer, kSingleStream, kOffline };
const char* scenario_name(Scenario s);

// A published row of the accelerator (TPU paper Table 4: batch 200, 225,000/s per die, 7.0 ms
// p99): the host scale is set so that the latency quantile at rate_per_s is latency_s.
struct CalibrationSpec {
  int64_t batch = 0;       // the accelerator's fixed batch of the published row
  double rate_per_s = 0;   // the row's rate (the whole host: all replicas)
  double latency_s = 0;    // the row's latency at the study's percentile
};

struct StudySpec {
  Scenario scenario = Scenario::kNone;
  std::vector<int64_t> batches;   // served batch sizes (the largest batch of timeout/deadline)
  std::vector<Policy> policies;
  double timeout_s = 0;           // the timeout policy's queue delay
  double deadline_s = 0;          // the deadline policy's response-time limit
  double quantile = 0.99;         // --percentile / 100
  double bound_s = 0;             // > 0: the latency bound (max throughput under it; Server's bound)
  double rate_per_s = 0;          // > 0: also (or only) the latency at this rate (whole host)
  bool at_trace_rate = false;     // a trace at its own rate (no bound, no rate)
  ArrivalSpec arrivals;           // kind, cv, trace (the rate is set per run)
  HostModel host;                 // before calibration
  std::optional<CalibrationSpec> calibration;
  std::vector<int64_t> replicas;  // per platform, in ServiceTables::platforms order
  Dispatch dispatch = Dispatch::kRoundRobin;
  uint64_t requests = 200000;     // per simulation (bound and rate modes)
  uint64_t seed = 1;
  int curve_points = 0;           // latency-throughput curve points per result (0: none)
  double min_duration_s = 600;    // MLPerf: the simulated time a scenario run must cover
  uint64_t max_requests = 10'000'000;  // MLPerf: the most requests one simulation may use
};

struct MlperfOutcome {
  uint64_t queries = 0;           // simulated
  uint64_t min_queries = 0;       // the rules' table for the percentile (Server, SingleStream)
  double duration_s = 0;          // simulated time the run covered
  bool meets_duration = false;    // duration_s >= min_duration_s
  bool capped = false;            // max_requests cut the run short of the rules
  int64_t overlatency = 0;        // Server: queries above the bound
  int64_t queries_needed = 0;     // Server: min_passing_queries(t) + t; SingleStream: for t = 1
  bool early_stopping_passed = false;
  double estimate_s = 0;          // SingleStream: the early-stopping percentile estimate
  int64_t discarded = 0;          // SingleStream: the slowest queries the estimate drops
};

struct StudyRow {
  size_t platform = 0;
  int64_t batch = 0;
  Policy policy = Policy::kFixed;
  int64_t replicas = 1;
  double capacity_per_s = 0;      // capacity() of this configuration
  // Bound / Server: the highest rate that meets the requirement and the run there.
  bool searched = false;
  bool feasible = false;
  double max_rate_per_s = 0;
  int evaluations = 0;
  SimResult at_max;
  // Rate mode (or a trace at its own rate): the run at that rate.
  bool has_at_rate = false;
  double at_rate_per_s = 0;
  SimResult at_rate;
  // SingleStream / Offline: the run.
  bool has_scenario_run = false;
  SimResult scenario_run;
  MlperfOutcome mlperf;
  std::vector<CurvePoint> curve;
};

struct StudyResult {
  HostModel host;                       // as used (calibrated when asked)
  std::optional<Calibration> calibration;
  std::vector<StudyRow> rows;           // platform, then batch, then policy
  int best = -1;                        // the accelerator's best row (-1: none feasible)
  uint64_t simulated_requests = 0;      // over every simulation of the study
};

// The SimConfig of one (platform, batch, policy) of the study, at rate 0 (set per run).
SimConfig study_config(const StudySpec& spec, const ServiceTables& tables, size_t platform, int64_t batch,
                       Policy policy, const HostModel& host);

StudyResult run_study(const StudySpec& spec, const ServiceTables& tables);

// The rules' minimum query count for a tail percentile (0.90 -> 24,576; 0.99 -> 270,336:
// the confidence table's margins, rounded up to a multiple of 2^13).
uint64_t mlperf_min_queries(double quantile);

}  // namespace tessera::serve
