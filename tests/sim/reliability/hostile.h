#pragma once
// Shared helpers of the hostile-input tests: scratch directories, config edits and
// the `tessera` executable (TESSERA_UNDER_TEST overrides it, to show a test fails on
// an older build).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace hostile {

namespace fs = std::filesystem;
using tessera_test::CliResult;

inline const fs::path kSrc = TESSERA_SOURCE_DIR;

inline std::string exe() {
  const char* p = std::getenv("TESSERA_UNDER_TEST");
  return p ? p : tessera_test::tessera_path();
}

// `tessera <args>` with a time limit: a hang is a failure (exit 124), not a stuck suite.
inline CliResult cli(const std::string& args, int timeout_s = 60) {
  return tessera_test::run_shell("timeout -s KILL " + std::to_string(timeout_s) + " " + exe() + " " + args);
}

inline fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(TESSERA_BINARY_DIR) / "test-out" / "hostile" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline fs::path write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// The shipped TPU v1 config with `from` replaced by `to` (once; the test fails if absent).
inline std::string tpu_with(const std::string& from, const std::string& to) {
  std::string cfg = tessera_test::slurp(kSrc / "configs/tpu-v1.yaml");
  const auto at = cfg.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) cfg.replace(at, from.size(), to);
  return cfg;
}

inline bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Exit 2 with the phrase, never an internal error, a crash or a sanitizer report.
inline void expect_input_error(const CliResult& r, const std::string& phrase) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, phrase)) << "expected '" << phrase << "' in:\n" << r.output;
  EXPECT_FALSE(contains(r.output, "internal error")) << r.output;
  EXPECT_FALSE(contains(r.output, "Sanitizer")) << r.output;
  EXPECT_FALSE(contains(r.output, "runtime error")) << r.output;
}

// serving.json writes NaN and inf as null, next to nulls that mean "not given" (a bound not
// asked for, no calibration): the keys of nulls that stand where a figure must be (a latency
// percentile, a rate, a throughput, a capacity, a utilization, a mean), "" when none.
inline std::string null_figures(const nlohmann::json& j, const std::string& path = "") {
  static const char* kFigures[] = {"p50", "p90", "p95", "p99", "p99.9", "mean_ms", "throughput_per_s", "capacity_per_s",
                                   "max_throughput_per_s", "max_capacity_per_s", "utilization", "replica_utilization",
                                   "service_ms", "offered_per_s", "per_replica_per_s", "at_percentile_ms"};
  std::string out;
  // The headline of a study with no feasible rate is null by design (no maximum throughput).
  const bool infeasible_headline = path.empty() && j.is_object() && j.contains("feasible") && j["feasible"] == false;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (infeasible_headline && !it.value().is_structured()) continue;
      bool figure = false;
      for (const char* f : kFigures) figure = figure || it.key() == f;
      if (it.value().is_null() && (figure || contains(path, "latency_ms"))) out += path + "." + it.key() + " ";
      out += null_figures(it.value(), path + "." + it.key());
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) out += null_figures(j[i], path + "[" + std::to_string(i) + "]");
  }
  return out;
}

}  // namespace hostile

// An InputError thrown after the SystemC simulation (a run past the time bound, a report
// file that cannot be written) trips ASan's known false positive with Debian's SystemC
// coroutines in the sanitized build (docs/reliability.md): only that exact warning skips.
#define HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r)                                   \
  if (tessera_test::systemc_asan_false_positive(r)) {                             \
    GTEST_SKIP() << "ASan + SystemC stack switching (see docs/reliability.md)"; \
  }
