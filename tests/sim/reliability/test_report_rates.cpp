// D12 of the reliability audit: with an int8 x int8 MAC rate other than 1 the report
// applied that rate twice (ArchConfig::peak_tops already includes it), so every peak was
// too low and utilization passed 100 %. Every peak in the report is rows * cols * rate *
// 2 * clock for the mode the work ran at, whatever the int8 rate is.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "hostile.h"

using namespace hostile;

namespace {

// TPU v1: 256 x 256 PEs at 700 MHz; rate 1.0 gives 91.7504 TOPS.
constexpr double kPeakRate1 = 256.0 * 256.0 * 2.0 * 700e6 / 1e12;

nlohmann::json run_report(const std::string& name, const std::string& cfg, const std::string& workload,
                          const std::string& extra = "") {
  const fs::path dir = scratch("rates-" + name);
  const fs::path arch = write(dir / "arch.yaml", cfg);
  const CliResult r = cli("run -q -a " + arch.string() + " -w " + workload + " -o " + (dir / "out").string() + " " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return {};
  return nlohmann::json::parse(tessera_test::slurp(dir / "out" / "report.json"));
}

void expect_no_utilization_above_one(const nlohmann::json& rep) {
  EXPECT_LE(rep["summary"]["utilization"].get<double>(), 1.0);
  for (const auto& l : rep["layers"]) EXPECT_LE(l["utilization"].get<double>(), 1.0) << l["name"];
}

}  // namespace

// The audit's reproducer: int8 rate 0.5 on cnn0 reported 187.9 % of 22.94 TOPS.
TEST(ReportRates, Int8RateHalfPeakIsHalfNotQuarter) {
  const auto rep = run_report("half", tpu_with("{a: int8, b: int8, rate: 1.0}", "{a: int8, b: int8, rate: 0.5}"),
                              "workloads/tpu/cnn0.yaml");
  ASSERT_FALSE(rep.is_null());
  EXPECT_DOUBLE_EQ(rep["arch"]["peak_tops_int8"].get<double>(), kPeakRate1 * 0.5);
  EXPECT_DOUBLE_EQ(rep["summary"]["peak_tops"].get<double>(), kPeakRate1 * 0.5);
  for (const auto& l : rep["layers"]) {
    if (l["peak_tops"].get<double>() > 0) {
      EXPECT_DOUBLE_EQ(l["peak_tops"].get<double>(), kPeakRate1 * 0.5) << l["name"];
    }
  }
  expect_no_utilization_above_one(rep);
}

// Another precision: int16 x int16 at 0.125 with int8 at 0.25 runs at 1/8 of rate 1.
TEST(ReportRates, Int16PeakWithInt8RateNotOne) {
  std::string cfg = tpu_with("{a: int8, b: int8, rate: 1.0}", "{a: int8, b: int8, rate: 0.25}");
  const auto at = cfg.find("{a: int16, b: int16, rate: 0.25}");
  ASSERT_NE(at, std::string::npos);
  cfg.replace(at, 32, "{a: int16, b: int16, rate: 0.125}");
  const auto rep = run_report("int16", cfg, "workloads/tpu/mlp1.yaml", "-p int16");
  ASSERT_FALSE(rep.is_null());
  EXPECT_DOUBLE_EQ(rep["summary"]["peak_tops"].get<double>(), kPeakRate1 * 0.125);
  expect_no_utilization_above_one(rep);
}

// The roofline's per-mode roofs: each mode's peak is rate-1 peak x its own rate.
TEST(ReportRates, RooflineModePeaksUseEachRateOnce) {
  const auto rep = run_report("roof", tpu_with("{a: int8, b: int8, rate: 1.0}", "{a: int8, b: int8, rate: 0.8}"),
                              "workloads/tpu/mlp1.yaml");
  ASSERT_FALSE(rep.is_null());
  for (const auto& m : rep["roofline"]["by_precision"]) {
    EXPECT_DOUBLE_EQ(m["peak_tops"].get<double>(), kPeakRate1 * m["mac_rate"].get<double>()) << m["mode"];
  }
  expect_no_utilization_above_one(rep);
}
