#pragma once
// What the serving simulation is given (docs/serving.md): a request stream, a batching
// policy, a host (cores, per-request and per-batch CPU time, the PCIe root complex) and
// N replicas of one platform, each serving a batch of b samples in service(b) seconds.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/serve/random.h"

namespace tessera::serve {

// The random part of a time: none, exponential, lognormal (heavy-tailed) or Pareto (heavier).
struct Tail {
  enum class Kind { kNone, kExponential, kLognormal, kPareto };
  Kind kind = Kind::kNone;
  double scale_s = 0;  // exponential: the mean; lognormal: the median; Pareto: the minimum x_m
  double shape = 0;    // lognormal: sigma of the log; Pareto: alpha (> 1, so the mean exists)

  double sample(Rng& rng) const;
  double mean_s() const;
  Tail scaled(double k) const;  // every time multiplied by k
};
const char* tail_kind_name(Tail::Kind kind);

// fixed + per_sample * samples + tail, in seconds.
struct HostTime {
  double fixed_s = 0;
  double per_sample_s = 0;
  Tail tail;

  bool is_zero() const { return fixed_s == 0 && per_sample_s == 0 && tail.kind == Tail::Kind::kNone; }
  double sample(Rng& rng, int64_t samples) const {
    return fixed_s + per_sample_s * static_cast<double>(samples) + tail.sample(rng);
  }
  double mean_s(int64_t samples) const { return fixed_s + per_sample_s * static_cast<double>(samples) + tail.mean_s(); }
  HostTime scaled(double k) const { return {fixed_s * k, per_sample_s * k, tail.scaled(k)}; }
};

// The host all replicas share (configs/hosts/*.yaml). Zero times and no limits: the host
// adds nothing and the queue sees the accelerator alone.
struct HostModel {
  std::string name = "none";
  std::string source;     // the YAML file; empty for the built-in "none"
  int64_t cores = 0;      // servers for the CPU work; 0: unlimited
  HostTime request_cpu;   // per request, before it joins the batching queue (RPC, parsing)
  HostTime batch_cpu;     // per batch, before it goes to a replica (assembly, driver, launch)
  double pcie_root_bytes_per_s = 0;  // the root complex all replicas' transfers share; 0: unlimited
  double scale = 1;       // already applied to every time above (what calibration found)

  bool adds_nothing() const {
    return request_cpu.is_zero() && batch_cpu.is_zero() && pcie_root_bytes_per_s == 0;
  }
  HostModel scaled(double k) const;  // every CPU time multiplied by k (calibration)
};

// One platform's time to serve a batch, from the SystemC model (the accelerator) or a
// baseline model (CPU/GPU): service(b) at the simulated batch sizes, linear in between.
struct ServiceTable {
  std::string platform;                 // "tpu-v1", "k80", ...
  std::vector<int64_t> batches;         // ascending, simulated
  std::vector<double> service_s;        // time of one batch, host transfers included
  std::vector<double> pcie_bytes;       // host <-> device bytes of one batch (the root complex carries them)

  int64_t max_batch() const { return batches.empty() ? 0 : batches.back(); }
  double service_at(int64_t b) const;   // interpolated; b must be in [1, max_batch]
  double bytes_at(int64_t b) const;
};

enum class Policy { kFixed, kTimeout, kDeadline };
const char* policy_name(Policy p);

struct BatchPolicy {
  Policy kind = Policy::kFixed;
  int64_t max_batch = 1;   // fixed: the batch; timeout/deadline: the largest
  double timeout_s = 0;    // timeout: the oldest request waits at most this long for the batch to fill
  double deadline_s = 0;   // deadline: a request's response-time limit (from its arrival)
};

enum class Dispatch { kRoundRobin, kShortestQueue };
const char* dispatch_name(Dispatch d);

// A recorded request stream (`arrival_s[,size]` CSV).
struct Trace {
  std::string source;
  std::vector<double> arrival_s;  // non-decreasing, from 0
  std::vector<uint32_t> size;     // samples per request (1 when the column is absent)
  double natural_rate_per_s() const;  // requests / time span
};

enum class ArrivalKind { kPoisson, kConstant, kGamma, kHyperExponential, kTrace, kClosedLoop, kAllAtOnce };
const char* arrival_name(ArrivalKind k);

struct ArrivalSpec {
  ArrivalKind kind = ArrivalKind::kPoisson;
  double rate_per_s = 0;  // requests per second (a trace is time-scaled to it; 0 keeps the trace's own)
  double cv = 1;          // gamma / hyper-exponential: coefficient of variation of the gaps
  std::shared_ptr<const Trace> trace;
};

enum class ServiceDist { kDeterministic, kExponential };

struct SimConfig {
  ArrivalSpec arrivals;
  BatchPolicy policy;
  HostModel host;
  ServiceTable service;
  ServiceDist service_dist = ServiceDist::kDeterministic;  // exponential: for closed-form checks
  int64_t replicas = 1;
  Dispatch dispatch = Dispatch::kRoundRobin;
  uint64_t requests = 100000;  // a trace has its own count (at most this many are used)
  uint64_t seed = 1;
  bool keep_latencies = false;  // SimResult::latencies_s (MLPerf early stopping needs them)
  double target_quantile = 0.99;  // SimResult::latency_at_target_s
  double latency_bound_s = 0;     // > 0: SimResult::over_bound counts the requests above it
};

struct Percentiles {
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0;
};

struct SimResult {
  uint64_t requests = 0;
  uint64_t samples = 0;
  uint64_t batches = 0;
  double first_arrival_s = 0;
  double last_completion_s = 0;
  double span_s = 0;                 // last completion - first arrival
  double offered_rate_per_s = 0;     // requests / (last arrival - first arrival)
  double throughput_per_s = 0;       // requests / span
  double samples_per_s = 0;
  double mean_batch = 0;             // samples per batch
  // Latency of a request: its arrival to its batch's completion.
  double latency_mean_s = 0;
  double latency_max_s = 0;
  Percentiles latency_s;
  double latency_at_target_s = 0;    // at SimConfig::target_quantile
  uint64_t over_bound = 0;           // requests slower than SimConfig::latency_bound_s
  double fill_wait_mean_s = 0;       // joining the batching queue -> its batch closes
  double host_wait_mean_s = 0;       // waiting for a free host core (requests and batches)
  double replica_wait_mean_s = 0;    // a batch waiting for its replica (and the root complex)
  // Utilization: busy time / span.
  double replica_utilization = 0;    // mean over replicas
  std::vector<double> replica_utilizations;
  double host_utilization = 0;       // core-seconds / (cores * span); 0 with unlimited cores
  double pcie_root_utilization = 0;
  // Queue lengths, time averages over the span.
  double mean_in_system = 0;         // requests arrived and not completed (L of Little's law)
  double max_in_system = 0;
  double mean_batching_queue = 0;    // requests waiting for their batch to close
  double mean_host_queue = 0;        // jobs waiting for a host core
  double mean_replica_queue = 0;     // batches waiting at replicas (sum over replicas)
  // Little's law, L = lambda * W, checked on every run: L from the time integral of the
  // number in system, lambda * W from the per-request latencies.
  double littles_lambda_w = 0;
  double littles_relative_error = 0;
  double capacity_per_s = 0;         // the bound rate the configuration can sustain (capacity())
  std::vector<double> latencies_s;   // per request, in arrival order (keep_latencies)
};

// The highest request rate the configuration can sustain: the smallest of the replicas'
// (at the largest batch), the host cores' and the root complex's.
double capacity(const SimConfig& c);

}  // namespace tessera::serve
