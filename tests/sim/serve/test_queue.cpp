// The queueing simulation against closed forms and hand-traced schedules. Every run also
// checks Little's law (L = lambda W) through expect_sane().
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/serve/arrivals.h"
#include "sim/serve/queue_sim.h"
#include "sim/serve/search.h"

namespace tessera::serve {
namespace {

// One platform whose batch of b takes per_batch_s + per_sample_s * b.
ServiceTable table(int64_t max_batch, double per_batch_s, double per_sample_s = 0, double bytes_per_sample = 0) {
  ServiceTable t;
  t.platform = "test";
  for (int64_t b = 1; b <= max_batch; ++b) {
    t.batches.push_back(b);
    t.service_s.push_back(per_batch_s + per_sample_s * static_cast<double>(b));
    t.pcie_bytes.push_back(bytes_per_sample * static_cast<double>(b));
  }
  return t;
}

SimConfig single_server(double service_s, double rate, uint64_t n) {
  SimConfig c;
  c.service = table(1, service_s);
  c.policy.max_batch = 1;
  c.arrivals.kind = ArrivalKind::kPoisson;
  c.arrivals.rate_per_s = rate;
  c.requests = n;
  c.seed = 7;
  return c;
}

// Little's law and bookkeeping hold on every run.
SimResult run(const SimConfig& c) {
  SimResult r = simulate(c);
  EXPECT_LT(r.littles_relative_error, 1e-9) << "L " << r.mean_in_system << " lambda*W " << r.littles_lambda_w;
  EXPECT_EQ(r.requests, c.arrivals.kind == ArrivalKind::kTrace ? std::min<uint64_t>(c.requests, c.arrivals.trace->arrival_s.size())
                                                                : c.requests);
  EXPECT_GE(r.latency_s.p99, r.latency_s.p50);
  EXPECT_GE(r.latency_max_s, r.latency_s.p999);
  return r;
}

// Pollaczek-Khinchine for M/D/1: Wq = rho S / (2 (1 - rho)).
void expect_md1(double rho) {
  const double s = 1e-3;
  const SimResult r = run(single_server(s, rho / s, 1'000'000));
  const double wq = r.latency_mean_s - s;
  const double pk = rho * s / (2 * (1 - rho));
  EXPECT_NEAR(wq / pk, 1.0, 0.02) << "rho " << rho << ": simulated " << wq << " s, P-K " << pk << " s";
  EXPECT_NEAR(r.replica_utilization, rho, 0.01);
}

TEST(ServeQueue, MD1MeanWaitMatchesPollaczekKhinchineAtHalfLoad) { expect_md1(0.5); }
TEST(ServeQueue, MD1MeanWaitMatchesPollaczekKhinchineAtEightyPercentLoad) { expect_md1(0.8); }

TEST(ServeQueue, MM1P99MatchesTheExponentialSojournTime) {
  // M/M/1 FCFS: the time in system is exponential with rate mu - lambda, so its
  // 99th percentile is ln(100) / (mu - lambda).
  const double s = 1e-3, rho = 0.7;
  SimConfig c = single_server(s, rho / s, 1'000'000);
  c.service_dist = ServiceDist::kExponential;
  const SimResult r = run(c);
  const double mu = 1 / s, lambda = rho / s;
  EXPECT_NEAR(r.latency_s.p99 / (std::log(100.0) / (mu - lambda)), 1.0, 0.03);
  EXPECT_NEAR(r.latency_mean_s / (1 / (mu - lambda)), 1.0, 0.03);
}

TEST(ServeQueue, BatchFillWaitForPoissonArrivalsIsBMinusOneOverTwoLambda) {
  // A fixed batch of B from Poisson arrivals: the k-th request of a batch waits for B - k
  // more gaps of mean 1/lambda, so the mean over the batch is (B - 1) / (2 lambda).
  for (int64_t b : {8, 200}) {
    SimConfig c;
    c.service = table(b, 1e-9);
    c.policy.max_batch = b;
    c.arrivals.rate_per_s = 10'000;
    c.requests = 400'000;
    const SimResult r = run(c);
    const double expected = static_cast<double>(b - 1) / (2 * 10'000.0);
    EXPECT_NEAR(r.fill_wait_mean_s / expected, 1.0, 0.01) << "batch " << b;
    EXPECT_NEAR(r.mean_batch, static_cast<double>(b), 1e-9);
  }
}

TEST(ServeQueue, SameSeedSameResultOtherSeedOtherResult) {
  SimConfig c;
  c.service = table(16, 2e-4, 1e-5, 1000);
  c.policy = {Policy::kTimeout, 16, 1e-3, 0};
  c.host.cores = 3;
  c.host.request_cpu = {5e-6, 0, {Tail::Kind::kLognormal, 2e-6, 1.0}};
  c.host.batch_cpu = {5e-5, 1e-6, {Tail::Kind::kPareto, 1e-5, 1.5}};
  c.host.pcie_root_bytes_per_s = 1e9;
  c.replicas = 3;
  c.dispatch = Dispatch::kShortestQueue;
  c.arrivals = {ArrivalKind::kGamma, 20'000, 3.0, nullptr};
  c.requests = 50'000;
  c.keep_latencies = true;
  const SimResult a = run(c), b = run(c);
  EXPECT_EQ(a.latencies_s, b.latencies_s);
  EXPECT_EQ(a.latency_s.p99, b.latency_s.p99);
  EXPECT_EQ(a.mean_in_system, b.mean_in_system);
  c.seed = 8;
  EXPECT_NE(run(c).latencies_s, a.latencies_s);
}

TEST(ServeQueue, RoundRobinReplicasWithConstantArrivalsNeverWait) {
  // 4 replicas of 1 ms each fed every 0.3 ms in turn: each replica gets a request every
  // 1.2 ms and is idle again after 1 ms, so every latency is exactly the service time.
  SimConfig c;
  c.service = table(1, 1e-3);
  c.replicas = 4;
  c.arrivals = {ArrivalKind::kConstant, 1 / 0.3e-3, 1, nullptr};
  c.requests = 10'000;
  const SimResult r = run(c);
  EXPECT_NEAR(r.latency_max_s, 1e-3, 1e-12);
  EXPECT_NEAR(r.latency_mean_s, 1e-3, 1e-12);
  EXPECT_NEAR(r.replica_utilization, 1e-3 / 1.2e-3, 1e-3);
}

TEST(ServeQueue, SharedRootComplexSerializesTransfers) {
  // 2 replicas, 1 ms service, each batch holds the root complex 0.6 ms, a request every
  // 0.5 ms in turn. Hand trace: r0 starts 0, done 1.0; r1 waits for the root until 0.6,
  // done 1.6 (1.1 ms); r2 arrives 1.0, root free at 1.2, done 2.2 (1.2 ms).
  SimConfig c;
  c.service = table(1, 1e-3, 0, 600);
  c.host.pcie_root_bytes_per_s = 1e6;  // 600 bytes -> 0.6 ms
  c.replicas = 2;
  c.arrivals = {ArrivalKind::kConstant, 2000, 1, nullptr};
  c.requests = 3;
  c.keep_latencies = true;
  const SimResult r = run(c);
  ASSERT_EQ(r.latencies_s.size(), 3u);
  EXPECT_NEAR(r.latencies_s[0], 1.0e-3, 1e-12);
  EXPECT_NEAR(r.latencies_s[1], 1.1e-3, 1e-12);
  EXPECT_NEAR(r.latencies_s[2], 1.2e-3, 1e-12);
  EXPECT_NEAR(capacity(c), 1 / 0.6e-3, 1e-6);  // the root complex, not the 2 x 1000/s replicas
}

TEST(ServeQueue, HostCoresAreServers) {
  // One core, 2 ms of CPU per request, a request every 1 ms, 0.1 ms service: the core is
  // the bottleneck; request k waits k ms for it and completes at 2 (k + 1) + 0.1 ms.
  SimConfig c;
  c.service = table(1, 1e-4);
  c.host.cores = 1;
  c.host.request_cpu.fixed_s = 2e-3;
  c.arrivals = {ArrivalKind::kConstant, 1000, 1, nullptr};
  c.requests = 3;
  c.keep_latencies = true;
  const SimResult r = run(c);
  EXPECT_NEAR(r.latencies_s[0], 2.1e-3, 1e-12);
  EXPECT_NEAR(r.latencies_s[1], 3.1e-3, 1e-12);
  EXPECT_NEAR(r.latencies_s[2], 4.1e-3, 1e-12);
  EXPECT_NEAR(r.host_wait_mean_s, 1e-3, 1e-12);
  EXPECT_NEAR(capacity(c), 500, 1e-9);
}

TEST(ServeQueue, TimeoutClosesAPartialBatch) {
  // Arrivals every 1 ms, batch up to 4, timeout 2.5 ms: requests at 0, 1, 2 close at 2.5
  // (the one at 3 is not there yet): fill waits 2.5, 1.5, 0.5 ms; then 3, 4, 5 at 5.5.
  SimConfig c;
  c.service = table(4, 1e-6);
  c.policy = {Policy::kTimeout, 4, 2.5e-3, 0};
  c.arrivals = {ArrivalKind::kConstant, 1000, 1, nullptr};
  c.requests = 6;
  const SimResult r = run(c);
  EXPECT_EQ(r.batches, 2u);
  EXPECT_NEAR(r.fill_wait_mean_s, 1.5e-3, 1e-12);
  EXPECT_NEAR(r.latency_max_s, 2.5e-3 + 1e-6, 1e-12);
}

TEST(ServeQueue, DeadlinePolicyClosesWhenWaitingLongerWouldMissTheOldestDeadline) {
  // Service 1 ms + 0.5 ms per sample, deadline 5 ms, arrivals every 1 ms, batch up to 4.
  // With 3 waiting at t = 2 the batch must close by 5 - 2.5 = 2.5 ms; it completes at 5.0,
  // exactly the oldest request's deadline. The next three close at 5.5 and end at 8.0.
  SimConfig c;
  c.service = table(4, 1e-3, 0.5e-3);
  c.policy = {Policy::kDeadline, 4, 0, 5e-3};
  c.arrivals = {ArrivalKind::kConstant, 1000, 1, nullptr};
  c.requests = 6;
  c.keep_latencies = true;
  const SimResult r = run(c);
  EXPECT_EQ(r.batches, 2u);
  const std::vector<double> expected = {5e-3, 4e-3, 3e-3, 5e-3, 4e-3, 3e-3};
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_NEAR(r.latencies_s[k], expected[k], 1e-12) << k;
}

TEST(ServeQueue, ShortestQueueBeatsRoundRobinWithUnequalWork) {
  // Exponential service makes replicas drift apart; joining the shortest queue evens them.
  SimConfig c = single_server(1e-3, 3200, 200'000);
  c.replicas = 4;
  c.service_dist = ServiceDist::kExponential;
  const SimResult rr = run(c);
  c.dispatch = Dispatch::kShortestQueue;
  const SimResult jsq = run(c);
  EXPECT_LT(jsq.latency_mean_s, rr.latency_mean_s);
  EXPECT_LT(jsq.latency_s.p99, rr.latency_s.p99);
}

TEST(ServeQueue, BurstyArrivalsHaveTheRequestedMeanAndCoefficientOfVariation) {
  for (ArrivalKind kind : {ArrivalKind::kGamma, ArrivalKind::kHyperExponential, ArrivalKind::kPoisson}) {
    for (double cv : {1.0, 3.0}) {
      if (kind == ArrivalKind::kPoisson && cv != 1.0) continue;
      const ArrivalSpec spec{kind, 1000, cv, nullptr};
      ArrivalProcess p(spec, 3);
      double sum = 0, sq = 0;
      const int n = 1'000'000;
      for (int k = 1; k <= n; ++k) {
        const double g = p.gap(static_cast<uint64_t>(k));
        sum += g;
        sq += g * g;
      }
      const double mean = sum / n, var = sq / n - mean * mean;
      EXPECT_NEAR(mean * 1000, 1.0, 0.01) << arrival_name(kind) << " cv " << cv;
      EXPECT_NEAR(std::sqrt(var) / mean / cv, 1.0, 0.03) << arrival_name(kind) << " cv " << cv;
    }
  }
}

TEST(ServeQueue, ClosedLoopKeepsOneRequestInFlight) {
  SimConfig c;
  c.service = table(1, 2e-3);
  c.arrivals.kind = ArrivalKind::kClosedLoop;
  c.requests = 100;
  const SimResult r = run(c);
  EXPECT_DOUBLE_EQ(r.latency_max_s, 2e-3);
  EXPECT_NEAR(r.throughput_per_s, 500, 1e-6);
  EXPECT_NEAR(r.mean_in_system, 1.0, 1e-12);
}

TEST(ServeQueue, AllAtOnceIsServedAtFullBatches) {
  // Offline: 1000 samples at t = 0, batch 100, 2 replicas of 10 ms per batch: 5 rounds.
  SimConfig c;
  c.service = table(100, 10e-3);
  c.policy.max_batch = 100;
  c.replicas = 2;
  c.arrivals.kind = ArrivalKind::kAllAtOnce;
  c.requests = 1000;
  const SimResult r = run(c);
  EXPECT_EQ(r.batches, 10u);
  EXPECT_NEAR(r.span_s, 50e-3, 1e-12);
  EXPECT_NEAR(r.samples_per_s, 20'000, 1e-6);
}

TEST(ServeSearch, MaxRateUnderAnMD1BoundMatchesTheClosedForm) {
  // M/D/1 mean wait rho S / (2 (1 - rho)); a bound of 3 S on the mean sojourn time is met
  // up to rho = 0.8 (wait 2 S). The search over rates finds it within its tolerance.
  SimConfig c = single_server(1e-3, 1, 400'000);
  const MaxRate m = max_rate(c, [](const SimResult& r) { return r.latency_mean_s <= 3e-3; });
  ASSERT_TRUE(m.feasible);
  EXPECT_NEAR(m.rate_per_s / 800.0, 1.0, 0.02);
  EXPECT_NEAR(m.capacity_per_s, 1000, 1e-9);
}

TEST(ServeSearch, CalibrationFindsTheHostScaleThatGivesTheTarget) {
  SimConfig c = single_server(1e-3, 500, 100'000);
  c.host.batch_cpu = {1e-4, 0, {Tail::Kind::kLognormal, 1e-4, 1.0}};
  c.target_quantile = 0.99;
  const Calibration cal = calibrate_host_scale(c, 8e-3);
  EXPECT_NEAR(cal.achieved_s / 8e-3, 1.0, 0.01);
  SimConfig check = c;
  check.host = c.host.scaled(cal.scale);
  EXPECT_NEAR(simulate(check).latency_at_target_s / 8e-3, 1.0, 0.01);
  EXPECT_LT(cal.device_only_s, 8e-3);
}

}  // namespace
}  // namespace tessera::serve
