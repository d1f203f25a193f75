// D1 of the reliability audit: simulated time must never overflow 64-bit picoseconds.
// A config whose single steps (one weight tile, one request's latency, one tile at a MAC
// rate, one pipeline fill) cannot be represented with headroom is rejected naming its key;
// a run whose total time would pass the bound fails with exit 2; no cycle count wraps and
// no out-of-range double is cast (which gave faster-than-baseline results or endless loops).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "hostile.h"
#include "models/common/clock.h"
#include "models/common/bandwidth_server.h"
#include "models/common/time_bounds.h"

using namespace hostile;

namespace {

const std::string kMlp1 = "workloads/tpu/mlp1.yaml";

CliResult run_cfg(const fs::path& dir, const std::string& cfg, const std::string& workload = kMlp1) {
  const fs::path arch = write(dir / "arch.yaml", cfg);
  return cli("run -q -a " + arch.string() + " -w " + workload + " -o " + (dir / "out").string());
}

void expect_rejected(const std::string& name, const std::string& from, const std::string& to,
                     const std::string& key) {
  SCOPED_TRACE(name + ": " + to);
  const fs::path dir = scratch("time-" + name);
  const CliResult r = run_cfg(dir, tpu_with(from, to));
  expect_input_error(r, key);
  EXPECT_TRUE(contains(r.output, "2^50 ps")) << r.output;  // says why
  EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));
}

// A chain of `n` relu layers on a 16-element vector: n vector instructions in sequence.
fs::path relu_chain(const fs::path& dir, int n) {
  std::string g = "name: chain\ninputs: [{name: x, shape: [16]}]\nlayers:\n";
  for (int i = 0; i < n; ++i) g += "  - {name: l" + std::to_string(i) + ", op: relu}\n";
  return write(dir / "chain.yaml", g);
}

}  // namespace

// The audit's reproducers: 1e-15 GB/s gave a run faster than at 34 GB/s, 1e-10 never returned.
TEST(TimeBounds, WeightBandwidthTooLowForOneTile) {
  for (const char* bw : {"1e-15", "1e-10", "5e-8", "1e-300"}) {
    expect_rejected("bw", "bandwidth_gb_per_s: 34 ", std::string("bandwidth_gb_per_s: ") + bw + " ",
                    "weight_memory.bandwidth_gb_per_s: " + std::string(bw) + " makes one 256 x 256 weight tile");
  }
}

// Just above the bound the config is accepted and runs to the end (no false rejection).
TEST(TimeBounds, WeightBandwidthJustAboveTheStepBoundRuns) {
  const fs::path dir = scratch("time-bw-ok");
  const CliResult r = run_cfg(dir, tpu_with("bandwidth_gb_per_s: 34 ", "bandwidth_gb_per_s: 1e-7 "));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "out" / "report.json"));
}

TEST(TimeBounds, ClockTooSlow) {
  expect_rejected("clock", "clock_mhz: 700 ", "clock_mhz: 1e-9 ", "clock_mhz: 1e-9 makes one 256-cycle array tile");
  expect_rejected("clock2", "clock_mhz: 700 ", "clock_mhz: 1e-7 ", "clock_mhz: 1e-7 makes one 256-cycle array tile");
}

TEST(TimeBounds, LatenciesTooLong) {
  expect_rejected("wm-lat", "latency_ns: 100 ", "latency_ns: 1e300 ", "weight_memory.latency_ns: 1e300 makes one request");
  expect_rejected("pcie-lat", "latency_ns: 1000 ", "latency_ns: 1e300 ", "pcie.latency_ns: 1e300 makes one transfer");
  expect_rejected("pcie-lat2", "latency_ns: 1000 ", "latency_ns: 2e12 ", "pcie.latency_ns");
  // Beyond the YAML number range: a range message, not "must be >= -1e+300".
  const fs::path dir = scratch("time-lat-huge");
  const CliResult r = run_cfg(dir, tpu_with("latency_ns: 100 ", "latency_ns: 1e308 "));
  expect_input_error(r, "weight_memory.latency_ns: must be at most 1e+300, got 1e308");
}

TEST(TimeBounds, PipelineLatencyTooLong) {
  expect_rejected("pipe", "pipeline_latency_cycles: 8 ", "pipeline_latency_cycles: 9223372036854775807 ",
                  "vector_unit.pipeline_latency_cycles: 9223372036854775807 makes one pipeline fill");
  expect_rejected("pipe2", "pipeline_latency_cycles: 8 ", "pipeline_latency_cycles: 1000000000000 ",
                  "vector_unit.pipeline_latency_cycles");
}

// int8 rate 1e-300 gave the cycles of rate 1 (the cast of 2.56e302 wrapped).
TEST(TimeBounds, MacRateTooLow) {
  expect_rejected("rate-int8", "{a: int8, b: int8, rate: 1.0}", "{a: int8, b: int8, rate: 1e-300}",
                  "array.mac_modes[0].rate: 1e-300 makes one 256-cycle array tile");
  expect_rejected("rate-int16", "{a: int16, b: int16, rate: 0.25}", "{a: int16, b: int16, rate: 1e-300}",
                  "array.mac_modes[3].rate");
  expect_rejected("rate-small", "{a: int8, b: int16, rate: 0.5}", "{a: int8, b: int16, rate: 1e-12}",
                  "array.mac_modes[1].rate");
}

TEST(TimeBounds, UnifiedBufferPortTooNarrowForASlowClock) {
  std::string cfg = tpu_with("clock_mhz: 700 ", "clock_mhz: 3e-6 ");
  const fs::path dir = scratch("time-ub");
  const auto at = cfg.find("read_bytes_per_cycle: 256");
  ASSERT_NE(at, std::string::npos);
  cfg.replace(at, 25, "read_bytes_per_cycle: 1  ");
  const CliResult r = run_cfg(dir, cfg);
  expect_input_error(r, "unified_buffer.read_bytes_per_cycle: 1 makes one 256 x 256 tile through the read port");
}

// Every step within bounds, but 4500 pipeline fills of ~2^50 ps in sequence pass 2^62 ps.
TEST(TimeBounds, RunPastTheBoundFailsCleanlyVectorUnit) {
  const fs::path dir = scratch("time-run-vector");
  const fs::path chain = relu_chain(dir, 4500);
  const CliResult r = run_cfg(dir, tpu_with("pipeline_latency_cycles: 8 ", "pipeline_latency_cycles: 780000000000 "),
                              chain.string());
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "simulated time passes the bound of 2^62 ps");
  EXPECT_FALSE(contains(r.output, "Info:")) << r.output;  // no SystemC chatter about the stop
  EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));
}

// The same through the weight memory: 64 x 80 weight tiles at the slowest accepted bandwidth.
TEST(TimeBounds, RunPastTheBoundFailsCleanlyWeightMemory) {
  const fs::path dir = scratch("time-run-weights");
  const fs::path g = write(dir / "fc.yaml",
                           "name: wide\ninputs: [{name: x, shape: [16384]}]\nlayers:\n"
                           "  - {name: fc, op: fc, units: 20480}\n");
  const CliResult r = run_cfg(dir, tpu_with("bandwidth_gb_per_s: 34 ", "bandwidth_gb_per_s: 6e-8 "), g.string());
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "simulated time passes the bound of 2^62 ps");
}

// A sweep point at such a bandwidth is a failed row, not a sweep that never ends.
TEST(TimeBounds, SweepPointBeyondTheBoundFailsAlone) {
  const fs::path dir = scratch("time-sweep");
  write(dir / "exp.yaml", "name: t\nbase: " + (kSrc / "configs/tpu-v1.yaml").string() +
                              "\nworkloads: [" + (kSrc / kMlp1).string() +
                              "]\nparameters:\n  grid:\n    weight_memory.bandwidth_gb_per_s: [34, 1e-10]\n"
                              "metrics: [summary.latency_s]\n");
  const CliResult r = cli("sweep " + (dir / "exp.yaml").string() + " -j 1 -q --out " + (dir / "out").string(), 120);
  EXPECT_NE(r.exit_code, -1) << r.output;  // not killed by the timeout
  const std::string rows = tessera_test::slurp(dir / "out" / "results.jsonl");
  EXPECT_TRUE(contains(rows, "bandwidth_gb_per_s")) << rows;
  EXPECT_TRUE(contains(rows, "2^50 ps")) << rows;
}

// ---------------------------------------------------------------- the clock itself

TEST(TimeBounds, ClockSaturatesInsteadOfCastingOutOfRange) {
  const tessera::models::CoreClock clock(700);
  EXPECT_EQ(clock.max_cycle(), static_cast<int64_t>(std::floor(tessera::models::kMaxSimulatedPs / (1e6 / 700))));
  EXPECT_EQ(clock.cycles_for_ns(100), 70);
  EXPECT_FALSE(clock.overflowed());
  EXPECT_EQ(clock.cycles_for_ns(1e300), clock.max_cycle() + 1);
  EXPECT_TRUE(clock.overflowed());

  const tessera::models::CoreClock c2(1000);
  EXPECT_EQ(c2.ceil_cycles(std::numeric_limits<double>::quiet_NaN()), c2.max_cycle() + 1);
  EXPECT_TRUE(c2.overflowed());
  const tessera::models::CoreClock c3(1000);
  EXPECT_EQ(c3.ceil_cycles(256.0 / 1e-300), c3.max_cycle() + 1);
  EXPECT_TRUE(c3.overflowed());
  const tessera::models::CoreClock c4(1000);
  EXPECT_LE(c4.at(std::numeric_limits<int64_t>::max()).value(), static_cast<uint64_t>(tessera::models::kMaxSimulatedPs));
  EXPECT_TRUE(c4.overflowed());
}

TEST(TimeBounds, CycleArithmeticSaturates) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(tessera::models::saturating_add(kMax - 1, 5), kMax);
  EXPECT_EQ(tessera::models::saturating_add(3, 4), 7);
  tessera::models::BandwidthServer server;
  EXPECT_EQ(server.serve(kMax - 10, 100), kMax);
  EXPECT_EQ(server.serve(0, kMax), kMax);  // queued behind a saturated server: still no wrap
  EXPECT_EQ(server.busy_cycles(), kMax);
}
