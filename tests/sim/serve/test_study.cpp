// The serving study (what `tessera serve` runs after the SystemC service times): headline
// choice, capacities with replicas sharing a host, calibration, MLPerf minimum query counts
// and the files' determinism, on hand-made service tables (no SystemC).
#include <gtest/gtest.h>

#include <cmath>

#include "sim/serve/serving_report.h"
#include "sim/serve/study.h"

namespace tessera::serve {
namespace {

// One accelerator whose batch of b takes 0.2 ms + 2 us * b, and one slower baseline.
ServiceTables tables() {
  ServiceTables t;
  t.workload_name = "w";
  for (int p = 0; p < 2; ++p) {
    PlatformService ps;
    ps.name = p == 0 ? "acc" : "cpu";
    ps.display_name = ps.name;
    ps.kind = p == 0 ? "accelerator" : "cpu";
    ps.table.platform = ps.name;
    for (int64_t b : {1, 2, 4, 8, 16, 32, 64}) {
      ps.table.batches.push_back(b);
      ps.table.service_s.push_back((p == 0 ? 1 : 4) * (0.2e-3 + 2e-6 * static_cast<double>(b)));
      ps.table.pcie_bytes.push_back(1000.0 * static_cast<double>(b));
    }
    t.platforms.push_back(ps);
  }
  return t;
}

StudySpec bound_spec() {
  StudySpec s;
  s.batches = {8, 64};
  s.policies = {Policy::kFixed};
  s.quantile = 0.99;
  s.bound_s = 5e-3;
  s.replicas = {1, 1};
  s.requests = 20000;
  s.seed = 3;
  return s;
}

TEST(ServeStudy, MlperfMinimumQueriesAreTheRulesTable) {
  EXPECT_EQ(mlperf_min_queries(0.90), 24576u);
  EXPECT_EQ(mlperf_min_queries(0.95), 57344u);
  EXPECT_EQ(mlperf_min_queries(0.97), 90112u);
  EXPECT_EQ(mlperf_min_queries(0.99), 270336u);
}

TEST(ServeStudy, HeadlineIsTheAcceleratorsHighestRateUnderTheBound) {
  const ServiceTables t = tables();
  const StudyResult r = run_study(bound_spec(), t);
  ASSERT_EQ(r.rows.size(), 4u);  // 2 platforms x 2 batches
  ASSERT_GE(r.best, 0);
  const StudyRow& best = r.rows[static_cast<size_t>(r.best)];
  EXPECT_EQ(best.platform, 0u);
  EXPECT_EQ(best.batch, 64);  // the larger batch sustains more under a loose bound
  for (const StudyRow& row : r.rows) {
    ASSERT_TRUE(row.feasible);
    EXPECT_LE(row.at_max.latency_at_target_s, 5e-3);
    EXPECT_LE(row.max_rate_per_s, row.capacity_per_s);
    EXPECT_LT(row.at_max.littles_relative_error, 1e-9);
    EXPECT_NEAR(row.capacity_per_s, static_cast<double>(row.batch) / t.platforms[row.platform].table.service_at(row.batch),
                1e-6 * row.capacity_per_s);
  }
}

TEST(ServeStudy, ReplicasShareTheHostsCores) {
  StudySpec s = bound_spec();
  s.batches = {64};
  s.replicas = {4, 1};
  s.host.cores = 2;
  s.host.request_cpu = {10e-6, 0, {}};                 // 10 us per request
  s.host.batch_cpu = {100e-6, 1e-6, {}};              // 100 us + 1 us per sample per batch
  const StudyResult r = run_study(s, tables());
  const double device = 4 * 64 / (0.2e-3 + 2e-6 * 64);
  const double host = 2 / (10e-6 + (100e-6 + 64e-6) / 64);
  ASSERT_LT(host, device);
  EXPECT_NEAR(r.rows[0].capacity_per_s, host, 1e-6 * host);
  EXPECT_GT(r.rows[0].at_max.host_utilization, 0.8);
}

TEST(ServeStudy, CalibrationScalesTheHostToThePublishedLatency) {
  StudySpec s = bound_spec();
  s.batches = {64};
  s.host.cores = 8;
  s.host.batch_cpu = {300e-6, 5e-6, {Tail::Kind::kLognormal, 100e-6, 1.0}};
  s.calibration = CalibrationSpec{64, 100000, 4e-3};
  const StudyResult r = run_study(s, tables());
  ASSERT_TRUE(r.calibration.has_value());
  EXPECT_NEAR(r.calibration->achieved_s / 4e-3, 1.0, 0.01);
  EXPECT_DOUBLE_EQ(r.host.scale, r.calibration->scale);
  // The study's host is the calibrated one: at that rate the p99 is the target.
  SimConfig c = study_config(s, tables(), 0, 64, Policy::kFixed, r.host);
  c.arrivals.rate_per_s = 100000;
  EXPECT_NEAR(simulate(c).latency_at_target_s / 4e-3, 1.0, 0.01);
}

TEST(ServeStudy, FilesAreTheSameForTheSameSeed) {
  const ServiceTables t = tables();
  StudySpec s = bound_spec();
  s.policies = {Policy::kFixed, Policy::kTimeout, Policy::kDeadline};
  s.timeout_s = 1e-3;
  s.deadline_s = 5e-3;
  s.curve_points = 3;
  ServeInputs in;
  in.arch_name = "acc";
  const StudyResult a = run_study(s, t), b = run_study(s, t);
  EXPECT_EQ(serving_json(in, s, t, a).dump(), serving_json(in, s, t, b).dump());
  EXPECT_EQ(serving_csv(s, t, a), serving_csv(s, t, b));
  EXPECT_EQ(curve_csv(t, a), curve_csv(t, b));
  EXPECT_EQ(serving_markdown(in, s, t, a), serving_markdown(in, s, t, b));
  s.seed = 4;
  EXPECT_NE(serving_csv(s, t, run_study(s, t)), serving_csv(s, t, a));
}

}  // namespace
}  // namespace tessera::serve
