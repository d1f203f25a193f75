// Trace files and host model files: every error names the file, the line (and the key).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/serve/host_config.h"
#include "sim/serve/queue_sim.h"
#include "sim/serve/service_runs.h"
#include "sim/serve/trace.h"

namespace tessera::serve {
namespace {

std::string trace_error(const std::string& text) {
  try {
    parse_trace_csv(text, "t.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ServeTrace, ReadsArrivalsAndSizes) {
  const Trace t = parse_trace_csv("# recorded\narrival_s,size\n0.0,1\n0.5,3\n\n1.0,2  # last\n", "t.csv");
  ASSERT_EQ(t.arrival_s.size(), 3u);
  EXPECT_EQ(t.size[1], 3u);
  EXPECT_DOUBLE_EQ(t.natural_rate_per_s(), 2.0);
  const Trace plain = parse_trace_csv("0\n0.001\n0.002\n", "p.csv");
  EXPECT_EQ(plain.size, (std::vector<uint32_t>{1, 1, 1}));
}

TEST(ServeTrace, ErrorsNameTheFileAndLine) {
  EXPECT_EQ(trace_error("arrival_s\n0\nabc\n"), "t.csv:3: arrival_s: 'abc' is not a number");
  EXPECT_EQ(trace_error("0.5\n0.4\n"), "t.csv:2: arrival_s: 0.40000000000000002 is before the previous request's 0.5 (arrivals must not decrease)");
  EXPECT_EQ(trace_error("0,1\n1,0\n"), "t.csv:2: size: must be in [1, 16777216] samples, got 0");
  EXPECT_EQ(trace_error("0,1\n1\n"), "t.csv:2: expected 2 columns (arrival_s,size) as in the rows before, got 1");
  EXPECT_EQ(trace_error("arrival,size\n"), "t.csv:1: header: expected 'arrival_s' or 'arrival_s,size', got 'arrival,size'");
  EXPECT_EQ(trace_error("-1\n"), "t.csv:1: arrival_s: '-1' is negative (seconds from the start of the trace)");
  EXPECT_EQ(trace_error("inf\n"), "t.csv:1: arrival_s: 'inf' is not a finite number");
  EXPECT_EQ(trace_error("1,2,3\n"), "t.csv:1: expected 'arrival_s' or 'arrival_s,size', got 3 columns");
  EXPECT_EQ(trace_error("# nothing\n"), "t.csv: the trace has no requests (expected rows of arrival_s[,size])");
}

TEST(ServeTrace, ARequestLargerThanTheBatchIsAnError) {
  auto tr = std::make_shared<Trace>(parse_trace_csv("0,1\n1,9\n", "big.csv"));
  SimConfig c;
  c.service.platform = "p";
  c.service.batches = {1, 4};
  c.service.service_s = {1e-3, 2e-3};
  c.service.pcie_bytes = {0, 0};
  c.policy.max_batch = 4;
  c.arrivals.kind = ArrivalKind::kTrace;
  c.arrivals.trace = tr;
  try {
    simulate(c);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "big.csv: request 2 has 9 samples, more than the batch (4)");
  }
}

TEST(ServeTrace, ScaledToTheRequestedRate) {
  auto tr = std::make_shared<Trace>(parse_trace_csv("0\n1\n2\n3\n4\n", "t.csv"));
  SimConfig c;
  c.service.platform = "p";
  c.service.batches = {1};
  c.service.service_s = {1e-6};
  c.service.pcie_bytes = {0};
  c.arrivals.kind = ArrivalKind::kTrace;
  c.arrivals.trace = tr;
  c.arrivals.rate_per_s = 100;  // the trace's own rate is 1/s
  const SimResult r = simulate(c);
  EXPECT_NEAR(r.offered_rate_per_s, 100, 1e-9);
  EXPECT_EQ(r.requests, 5u);
}

std::string host_error(const std::string& yaml) {
  try {
    parse_host_model(YamlNode::load_string(yaml, "h.yaml"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ServeHost, ParsesTimesInMicrosecondsAndAppliesTheScale) {
  const HostModel h = parse_host_model(YamlNode::load_string(
      "name: h\ncores: 8\nscale: 2\nrequest_cpu: {fixed_us: 5}\n"
      "batch_cpu: {fixed_us: 10, per_sample_us: 1, tail: {distribution: lognormal, median_us: 20, sigma: 1}}\n"
      "pcie_root_gb_per_s: 16\n",
      "h.yaml"));
  EXPECT_EQ(h.cores, 8);
  EXPECT_DOUBLE_EQ(h.scale, 2);
  EXPECT_DOUBLE_EQ(h.request_cpu.fixed_s, 10e-6);
  EXPECT_DOUBLE_EQ(h.batch_cpu.per_sample_s, 2e-6);
  EXPECT_DOUBLE_EQ(h.batch_cpu.tail.scale_s, 40e-6);
  EXPECT_DOUBLE_EQ(h.batch_cpu.tail.shape, 1);
  EXPECT_DOUBLE_EQ(h.pcie_root_bytes_per_s, 16e9);
}

TEST(ServeHost, ErrorsNameTheKey) {
  EXPECT_EQ(host_error("name: h\ncorez: 3\n"),
            "h.yaml:2:1: corez: unknown key; allowed here: name, description, cores, scale, request_cpu, batch_cpu, "
            "pcie_root_gb_per_s");
  EXPECT_EQ(host_error("name: h\nbatch_cpu: {tail: {distribution: pareto, min_us: 3, alpha: 1}}\n"),
            "h.yaml:2:60: batch_cpu.tail.alpha: must be > 1 (a Pareto tail with alpha <= 1 has no mean), got 1.000000");
  EXPECT_NE(host_error("name: h\nrequest_cpu: {tail: {distribution: gauss}}\n").find("request_cpu.tail.distribution"),
            std::string::npos);
  EXPECT_NE(host_error("name: h\ncores: -1\n").find("h.yaml:2:8: cores: must be in [0, 1048576], got -1"), std::string::npos);
}

// The service-time cache key of a composed config (`base:`) covers its bases: editing the base
// changes the key, so a shared cache never answers with the old base's times.
TEST(ServiceCache, KeyOfAComposedConfigFollowsItsBase) {
  const std::filesystem::path dir = std::filesystem::path(TESSERA_BINARY_DIR) / "test-out" / "serve-compose";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "base.yaml") << "name: b\nclock_mhz: 700\n";
  std::ofstream(dir / "v.yaml") << "base: base.yaml\nname: v\n";
  ServiceRequest r;
  r.arch = dir / "v.yaml";
  r.workload = dir / "v.yaml";  // any readable file: only the key is computed
  const std::string before = service_cache_key(r, 1);
  EXPECT_EQ(service_cache_key(r, 1), before);
  std::ofstream(dir / "base.yaml") << "name: b\nclock_mhz: 940\n";
  EXPECT_NE(service_cache_key(r, 1), before);
}

}  // namespace
}  // namespace tessera::serve

namespace tessera::serve {
namespace {
void expect_trace_error(const std::string& text, const std::string& phrase) {
  const std::string e = trace_error(text);
  EXPECT_NE(e.find(phrase), std::string::npos) << "expected '" << phrase << "' in: " << e.substr(0, 300);
}
}  // namespace

// Issue 34: arrivals have a finite range (1e308 gave inf latencies), a subnormal is a valid
// time, and one line is bounded (a 200 MB line took 1.4 GB to refuse).
TEST(TraceCsv, ArrivalsHaveAFiniteRangeAndLinesABound) {
  expect_trace_error("arrival_s\n0\n1e308\n", "t.csv:3: arrival_s: must be in [0, 1e9] seconds (31.7 years), got '1e308'");
  expect_trace_error("0\n1000000001\n", "t.csv:2: arrival_s: must be in [0, 1e9] seconds");
  expect_trace_error("0\n1e400\n", "t.csv:2: arrival_s: '1e400' is not a finite number");
  const Trace t = parse_trace_csv("0\n4.9e-324\n1e9\n", "t.csv");
  ASSERT_EQ(t.arrival_s.size(), 3u);
  EXPECT_EQ(t.arrival_s[1], 4.9e-324);
  EXPECT_EQ(t.arrival_s[2], 1e9);
  expect_trace_error("0\n" + std::string(70000, '1') + "\n", "t.csv:2: line longer than the 64 KiB allowed in a request trace");
  expect_trace_error("0\n# " + std::string(65536, 'c'), "t.csv:2: line longer than the 64 KiB");
}

TEST(TraceCsv, TheFileReaderStreamsWithinTheBounds) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tessera-trace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "ok.csv") << "arrival_s,size\r\n0,1\r\n0.5,2\r\n1,1"; }  // CRLF, no final newline
  const Trace t = load_trace_csv(dir / "ok.csv");
  ASSERT_EQ(t.arrival_s.size(), 3u);
  EXPECT_EQ(t.size[1], 2u);
  EXPECT_EQ(t.arrival_s[2], 1.0);
  { std::ofstream(dir / "long.csv") << "0\n" << std::string(100000, '2') << "\n"; }
  try {
    load_trace_csv(dir / "long.csv");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--trace " + (dir / "long.csv").string() + ":2: line longer than the 64 KiB"),
              std::string::npos) << e.what();
  }
  try {
    load_trace_csv(dir);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read the request trace: it is a directory"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace tessera::serve
