// Baseline spec loading: the shipped specs parse and carry the paper's figures; every
// malformed spec fails with file:line:col, the key path and what is allowed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "models/baseline/spec.h"
#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"

using namespace tessera;
using namespace tessera::baseline;

namespace {

const char* kCpu = R"(name: test cpu
kind: cpu
precision: fp32
peak_tops: {fp32: 1.0, int8: 4.0}
memory: {capacity: 1 GiB, bandwidth_gb_per_s: 100, efficiency: 0.5}
on_chip: {capacity: 64 KiB, bandwidth_gb_per_s: 1000}
efficiency:
  parallel_units: 4
  k_half: 64
  tiles:
    - {m: 16, n: 16, max: 0.8}
overheads: {launch_us: 1}
)";

BaselineSpec parse(const std::string& text) { return parse_baseline_spec(YamlNode::load_string(text, "spec.yaml"), "spec"); }

// The InputError message of parsing `text`, or "" if it parsed.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

TEST(BaselineSpec, ParsesAllFields) {
  const BaselineSpec s = parse(kCpu);
  EXPECT_EQ(s.id, "spec");
  EXPECT_EQ(s.name, "test cpu");
  EXPECT_EQ(s.kind, Kind::kCpu);
  EXPECT_EQ(s.precision, Precision::kFp32);
  EXPECT_DOUBLE_EQ(s.peak(), 1.0);
  EXPECT_DOUBLE_EQ(s.peak_tops_at(Precision::kInt8), 4.0);
  EXPECT_THROW(s.peak_tops_at(Precision::kBf16), InputError);
  EXPECT_EQ(s.memory_capacity_bytes, 1ull << 30);
  EXPECT_DOUBLE_EQ(s.memory_bandwidth_gb_per_s, 100);
  EXPECT_DOUBLE_EQ(s.memory_efficiency, 0.5);
  EXPECT_EQ(s.on_chip_bytes, 64u * 1024u);
  EXPECT_EQ(s.efficiency.parallel_units, 4);
  ASSERT_EQ(s.efficiency.tiles.size(), 1u);
  EXPECT_EQ(s.efficiency.tiles[0].m, 16);
  EXPECT_DOUBLE_EQ(s.efficiency.tiles[0].max, 0.8);
  EXPECT_DOUBLE_EQ(s.launch_us, 1);
  EXPECT_FALSE(s.host_link.has_value());
}

TEST(BaselineSpec, UnknownKeysAreErrors) {
  const std::string top = error_of(std::string(kCpu) + "turbo: true\n");
  EXPECT_NE(top.find("spec.yaml:13:1: turbo: unknown key; allowed here: name, kind"), std::string::npos) << top;
  const std::string nested = error_of(replace(kCpu, "capacity: 1 GiB,", "capacity: 1 GiB, channels: 8,"));
  EXPECT_NE(nested.find("memory.channels: unknown key; allowed here: technology, capacity, bandwidth_gb_per_s, efficiency"),
            std::string::npos)
      << nested;
  const std::string prec = error_of(replace(kCpu, "int8: 4.0", "fp64: 4.0"));
  EXPECT_NE(prec.find("peak_tops.fp64: unknown key; allowed here: fp32, tf32, bf16, fp16, int8"), std::string::npos) << prec;
  const std::string tile = error_of(replace(kCpu, "{m: 16, n: 16, max: 0.8}", "{m: 16, n: 16, k: 8, max: 0.8}"));
  EXPECT_NE(tile.find("efficiency.tiles[0].k: unknown key; allowed here: m, n, max"), std::string::npos) << tile;
}

TEST(BaselineSpec, Power) {
  const BaselineSpec measured = parse(std::string(kCpu) + "power: {idle_w: 41, busy_w: 145, tdp_w: 145, host_w: 82.5}\n");
  ASSERT_TRUE(measured.power);
  EXPECT_EQ(measured.power->basis, "measured");
  EXPECT_DOUBLE_EQ(measured.power->busy_w, 145);
  EXPECT_DOUBLE_EQ(measured.power->host_w, 82.5);
  const BaselineSpec tdp = parse(std::string(kCpu) + "power: {tdp_w: 350}\n");
  EXPECT_EQ(tdp.power->basis, "tdp");
  EXPECT_DOUBLE_EQ(tdp.power->busy_w, 350);
  EXPECT_FALSE(parse(kCpu).power);
  EXPECT_NE(error_of(std::string(kCpu) + "power: {idle_w: 41}\n").find("power: needs busy_w"), std::string::npos);
  EXPECT_NE(error_of(std::string(kCpu) + "power: {busy_w: 0}\n").find("power.busy_w"), std::string::npos);
  EXPECT_NE(error_of(std::string(kCpu) + "power: {tdp: 1}\n").find("power.tdp: unknown key"), std::string::npos);
}

TEST(BaselineSpec, PrecisionMustHaveAPeak) {
  const std::string e = error_of(replace(kCpu, "precision: fp32", "precision: bf16"));
  EXPECT_NE(e.find("spec.yaml:3:12: precision: 'bf16' has no entry in peak_tops (given: fp32, int8)"), std::string::npos) << e;
  const std::string bad = error_of(replace(kCpu, "precision: fp32", "precision: fp8"));
  EXPECT_NE(bad.find("precision: 'fp8' is not one of: fp32, tf32, bf16, fp16, int8"), std::string::npos) << bad;
  const std::string none = error_of(replace(kCpu, "peak_tops: {fp32: 1.0, int8: 4.0}", "peak_tops: {}"));
  EXPECT_NE(none.find("peak_tops: must give at least one of"), std::string::npos) << none;
}

TEST(BaselineSpec, RangesAreChecked) {
  const std::string bw = error_of(replace(kCpu, "bandwidth_gb_per_s: 100", "bandwidth_gb_per_s: 0"));
  EXPECT_NE(bw.find("memory.bandwidth_gb_per_s: must be in [1e-06, "), std::string::npos) << bw;
  const std::string eff = error_of(replace(kCpu, "efficiency: 0.5", "efficiency: 1.5"));
  EXPECT_NE(eff.find("memory.efficiency: must be in [1e-06, 1], got 1.5"), std::string::npos) << eff;
  const std::string max = error_of(replace(kCpu, "max: 0.8", "max: 0"));
  EXPECT_NE(max.find("efficiency.tiles[0].max: must be in [1e-06, 1], got 0"), std::string::npos) << max;
  const std::string units = error_of(replace(kCpu, "parallel_units: 4", "parallel_units: 0"));
  EXPECT_NE(units.find("efficiency.parallel_units: must be in [1, "), std::string::npos) << units;
  const std::string launch = error_of(replace(kCpu, "launch_us: 1", "launch_us: -1"));
  EXPECT_NE(launch.find("overheads.launch_us: must be in [0, 1000000000], got -1"), std::string::npos) << launch;
  const std::string tiles = error_of(replace(kCpu, "  tiles:\n    - {m: 16, n: 16, max: 0.8}\n", "  tiles: []\n"));
  EXPECT_NE(tiles.find("efficiency.tiles: must list at least one kernel tile"), std::string::npos) << tiles;
  const std::string kind = error_of(replace(kCpu, "kind: cpu", "kind: tpu"));
  EXPECT_NE(kind.find("kind: 'tpu' is not one of: cpu, gpu"), std::string::npos) << kind;
  // Issue 34: tiny and huge values that passed "> 0" / ">= 0" and made times infinite.
  const std::string tiny = error_of(replace(kCpu, "bandwidth_gb_per_s: 100", "bandwidth_gb_per_s: 1e-300"));
  EXPECT_NE(tiny.find("memory.bandwidth_gb_per_s: must be in [1e-06, 1000000], got 1e-300"), std::string::npos) << tiny;
  const std::string huge = error_of(replace(kCpu, "launch_us: 1", "launch_us: 1e300"));
  EXPECT_NE(huge.find("overheads.launch_us: must be in [0, 1000000000], got 1e300"), std::string::npos) << huge;
  const std::string missing = error_of(replace(kCpu, "overheads: {launch_us: 1}\n", ""));
  EXPECT_NE(missing.find("missing required key 'overheads'"), std::string::npos) << missing;
}

TEST(BaselineSpec, HostLinkIsForGpusOnly) {
  const std::string gpu_without = error_of(replace(kCpu, "kind: cpu", "kind: gpu"));
  EXPECT_NE(gpu_without.find("missing required key 'host_link'"), std::string::npos) << gpu_without;
  const std::string cpu_with = error_of(std::string(kCpu) + "host_link: {bandwidth_gb_per_s: 12, latency_us: 10}\n");
  EXPECT_NE(cpu_with.find("host_link: a CPU baseline has no host link"), std::string::npos) << cpu_with;
  const BaselineSpec g = parse(replace(kCpu, "kind: cpu", "kind: gpu") + "host_link: {bandwidth_gb_per_s: 12, latency_us: 10}\n");
  ASSERT_TRUE(g.host_link.has_value());
  EXPECT_DOUBLE_EQ(g.host_link->bandwidth_gb_per_s, 12);
  EXPECT_DOUBLE_EQ(g.host_link->latency_us, 10);
}

TEST(BaselineSpec, ShippedSpecsLoadWithThePapersFigures) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/configs/baselines";
  const auto names = available_specs(dir);
  for (const char* want : {"haswell-e5-2699v3", "k80", "xeon-8480", "epyc-9654", "a100", "h100-sxm", "h200"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  for (const auto& n : names) {
    const BaselineSpec s = load_baseline_spec(dir + "/" + n + ".yaml");  // throws on any error
    EXPECT_EQ(s.id, n);
    EXPECT_EQ(s.kind == Kind::kGpu, s.host_link.has_value()) << n;
  }
  const BaselineSpec haswell = load_baseline_spec(dir + "/haswell-e5-2699v3.yaml");
  EXPECT_EQ(haswell.precision, Precision::kFp32);  // the paper's comparison ran the CPU in floating point
  EXPECT_DOUBLE_EQ(haswell.peak(), 1.3);
  EXPECT_DOUBLE_EQ(haswell.memory_bandwidth_gb_per_s, 51);
  const BaselineSpec k80 = load_baseline_spec(dir + "/k80.yaml");
  EXPECT_EQ(k80.precision, Precision::kFp32);
  EXPECT_DOUBLE_EQ(k80.peak(), 2.8);
  EXPECT_DOUBLE_EQ(k80.memory_bandwidth_gb_per_s, 160);
  for (const char* modern : {"xeon-8480", "epyc-9654", "a100", "h100-sxm", "h200"}) {
    EXPECT_EQ(load_baseline_spec(dir + "/" + modern + ".yaml").precision, Precision::kInt8) << modern;
  }
  EXPECT_DOUBLE_EQ(load_baseline_spec(dir + "/h200.yaml").memory_bandwidth_gb_per_s, 4800);
  // Power: the paper's measured idle/busy per die (Table 2); vendor TDPs for the modern parts.
  ASSERT_TRUE(haswell.power && k80.power);
  EXPECT_DOUBLE_EQ(haswell.power->idle_w, 41);
  EXPECT_DOUBLE_EQ(haswell.power->busy_w, 145);
  EXPECT_DOUBLE_EQ(k80.power->idle_w, 25);
  EXPECT_DOUBLE_EQ(k80.power->busy_w, 98);
  for (const char* modern : {"xeon-8480", "epyc-9654", "a100", "h100-sxm", "h200"}) {
    const BaselineSpec m = load_baseline_spec(dir + "/" + modern + ".yaml");
    ASSERT_TRUE(m.power) << modern;
    EXPECT_EQ(m.power->basis, "tdp") << modern;
  }
}
