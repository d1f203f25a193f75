// Requests simulated per second of the serving queue (sim/serve, plain C++): docs/performance.md
// "Serving simulation". Three configurations of `tessera serve` runs, each at 80% of its
// capacity; prints one line per configuration: requests, wall and CPU seconds, requests/s.
//   build/bench/bench_serve [requests]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "sim/serve/queue_sim.h"

using namespace tessera::serve;

namespace {

ServiceTable linear_table(int64_t max_batch, double fixed_s, double per_sample_s) {
  ServiceTable t;
  t.platform = "bench";
  for (int64_t b = 1; b <= max_batch; b *= 2) {
    t.batches.push_back(b);
    t.service_s.push_back(fixed_s + per_sample_s * static_cast<double>(b));
    t.pcie_bytes.push_back(3584.0 * static_cast<double>(b));
  }
  if (t.batches.back() != max_batch) {
    t.batches.push_back(max_batch);
    t.service_s.push_back(fixed_s + per_sample_s * static_cast<double>(max_batch));
    t.pcie_bytes.push_back(3584.0 * static_cast<double>(max_batch));
  }
  return t;
}

void measure(const char* name, SimConfig c) {
  c.arrivals.rate_per_s = 0.8 * capacity(c);
  const auto w0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  const SimResult r = simulate(c);
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::printf("%-58s %10llu requests  %7.3f s wall  %7.3f s CPU  %9.3g requests/s (CPU)  p99 %.3f ms\n", name,
              static_cast<unsigned long long>(r.requests), wall, cpu, static_cast<double>(r.requests) / cpu,
              r.latency_s.p99 * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2'000'000;
  {
    SimConfig c;  // M/D/1: one request per batch, no host
    c.service = linear_table(1, 1e-3, 0);
    c.policy.max_batch = 1;
    c.requests = n;
    measure("M/D/1, batch 1, no host", c);
  }
  {
    SimConfig c;  // MLP0 on 4 tpu-v1 behind the calibrated Haswell host (docs/serving.md)
    c.service = linear_table(256, 0.581e-3, 0.25e-6);
    c.policy.max_batch = 200;
    c.replicas = 4;
    c.host.cores = 36;
    c.host.request_cpu = {3.85e-6, 0, {Tail::Kind::kLognormal, 1.93e-6, 1.0}};
    c.host.batch_cpu = {96e-6, 19.3e-6, {Tail::Kind::kLognormal, 193e-6, 1.0}};
    c.host.pcie_root_bytes_per_s = 78.8e9;
    c.requests = n;
    measure("batch 200, 4 replicas, 36-core host, lognormal tails", c);
  }
  {
    SimConfig c;  // small batches, timeout policy, bursty arrivals
    c.service = linear_table(8, 0.7e-3, 0.27e-3);
    c.policy.kind = Policy::kTimeout;
    c.policy.max_batch = 8;
    c.policy.timeout_s = 2e-3;
    c.arrivals.kind = ArrivalKind::kGamma;
    c.arrivals.cv = 3;
    c.requests = n;
    measure("timeout policy (2 ms), batch <= 8, gamma arrivals (cv 3)", c);
  }
  return 0;
}
