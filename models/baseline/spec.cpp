#include "models/baseline/spec.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"

namespace tessera::baseline {

namespace {

constexpr Precision kAllPrecisions[] = {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16,
                                        Precision::kInt8};

std::string num(double v) {
  std::ostringstream out;
  out.precision(12);
  out << v;
  return out.str();
}

// Every number of a spec has a finite range with a positive floor (issue 34 item 1: a peak or
// a bandwidth of 1e-300 passed "> 0" and made times infinite): "must be in [lo, hi], got X".
double in_range(const YamlNode& node, double lo, double hi) {
  const double v = node.as_double();
  if (!(v >= lo) || v > hi) node.fail("must be in [" + num(lo) + ", " + num(hi) + "], got " + node.raw().Scalar());
  return v;
}
constexpr double kMinRate = 1e-6;   // TOPS, GB/s, efficiencies: a millionth of the unit
constexpr double kMaxTimeUs = 1e9;  // launch and link latencies, k_half: 1000 s, far above any device
constexpr double kMinW = 1e-3, kMaxW = 1e5;

std::string precision_list() {
  std::string out;
  for (Precision p : kAllPrecisions) out += (out.empty() ? "" : ", ") + std::string(precision_name(p));
  return out;
}

}  // namespace

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kInt8: return "int8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view s) {
  for (Precision p : kAllPrecisions) {
    if (precision_name(p) == s) return p;
  }
  return std::nullopt;
}

int64_t precision_bytes(Precision p) {
  switch (p) {
    case Precision::kFp32:
    case Precision::kTf32: return 4;
    case Precision::kBf16:
    case Precision::kFp16: return 2;
    case Precision::kInt8: return 1;
  }
  return 4;
}

std::string_view kind_name(Kind k) { return k == Kind::kCpu ? "cpu" : "gpu"; }

double EfficiencyCurve::spatial(const GemmTileShape& t, int64_t m, int64_t n) const {
  if (m <= 0 || n <= 0) return 0.0;
  const int64_t blocks = ((m + t.m - 1) / t.m) * ((n + t.n - 1) / t.n);
  const int64_t waves = (blocks + parallel_units - 1) / parallel_units;
  return static_cast<double>(m) * static_cast<double>(n) /
         (static_cast<double>(waves) * static_cast<double>(parallel_units) * static_cast<double>(t.m) *
          static_cast<double>(t.n));
}

double EfficiencyCurve::reduction(int64_t k) const {
  if (k <= 0) return 0.0;
  return static_cast<double>(k) / (static_cast<double>(k) + k_half);
}

size_t EfficiencyCurve::best(int64_t m, int64_t k, int64_t n) const {
  size_t best = 0;
  for (size_t i = 1; i < tiles.size(); ++i) {
    if (at(tiles[i], m, k, n) > at(tiles[best], m, k, n)) best = i;
  }
  return best;
}

double BaselineSpec::peak_tops_at(Precision p) const {
  auto it = peak_tops.find(p);
  if (it == peak_tops.end()) {
    std::string have;
    for (const auto& [q, v] : peak_tops) have += (have.empty() ? "" : ", ") + std::string(precision_name(q));
    throw InputError("baseline '" + id + "' (" + source + "): no " + std::string(precision_name(p)) +
                     " peak in peak_tops; it has: " + have);
  }
  return it->second;
}

BaselineSpec parse_baseline_spec(const YamlNode& root, const std::string& id) {
  root.expect_keys({"name", "kind", "description", "precision", "peak_tops", "memory", "on_chip", "efficiency",
                    "overheads", "host_link", "power", "chip_link"});
  BaselineSpec s;
  s.id = id;
  s.source = root.file();
  const YamlNode name = root.at("name");
  s.name = name.as_string();
  if (s.name.empty()) name.fail("must not be empty");
  s.kind = root.at("kind").as_choice({"cpu", "gpu"}) == "cpu" ? Kind::kCpu : Kind::kGpu;
  s.description = root.string_or("description", "");

  const YamlNode peaks = root.at("peak_tops");
  std::vector<std::string> allowed;
  for (Precision p : kAllPrecisions) allowed.emplace_back(precision_name(p));
  peaks.expect_keys(allowed);
  for (Precision p : kAllPrecisions) {
    if (auto v = peaks.get(precision_name(p))) s.peak_tops[p] = in_range(*v, kMinRate, 1e6);
  }
  if (s.peak_tops.empty()) peaks.fail("must give at least one of: " + precision_list());

  const YamlNode prec = root.at("precision");
  const std::string pname = prec.as_string();
  const auto p = parse_precision(pname);
  if (!p) prec.fail("'" + pname + "' is not one of: " + precision_list());
  if (!s.peak_tops.count(*p)) {
    std::string have;
    for (const auto& [q, v] : s.peak_tops) have += (have.empty() ? "" : ", ") + std::string(precision_name(q));
    prec.fail("'" + pname + "' has no entry in peak_tops (given: " + have + ")");
  }
  s.precision = *p;

  const YamlNode mem = root.at("memory");
  mem.expect_keys({"technology", "capacity", "bandwidth_gb_per_s", "efficiency"});
  s.memory_technology = mem.string_or("technology", "DRAM");
  s.memory_capacity_bytes = mem.at("capacity").as_bytes(1);
  s.memory_bandwidth_gb_per_s = in_range(mem.at("bandwidth_gb_per_s"), kMinRate, 1e6);
  s.memory_efficiency = mem.get("efficiency") ? in_range(mem.at("efficiency"), kMinRate, 1.0) : 1.0;

  const YamlNode chip = root.at("on_chip");
  chip.expect_keys({"capacity", "bandwidth_gb_per_s"});
  s.on_chip_bytes = chip.at("capacity").as_bytes();
  s.on_chip_bandwidth_gb_per_s = in_range(chip.at("bandwidth_gb_per_s"), kMinRate, 1e7);

  const YamlNode eff = root.at("efficiency");
  eff.expect_keys({"parallel_units", "k_half", "tiles"});
  s.efficiency.parallel_units = eff.at("parallel_units").as_int(1, 1 << 20);
  s.efficiency.k_half = in_range(eff.at("k_half"), 0, kMaxTimeUs);
  const YamlNode tiles = eff.at("tiles");
  for (const YamlNode& t : tiles.elements()) {
    t.expect_keys({"m", "n", "max"});
    s.efficiency.tiles.push_back(GemmTileShape{t.at("m").as_int(1, 1 << 16), t.at("n").as_int(1, 1 << 16),
                                               in_range(t.at("max"), kMinRate, 1.0)});
  }
  if (s.efficiency.tiles.empty()) tiles.fail("must list at least one kernel tile {m, n, max}");

  const YamlNode over = root.at("overheads");
  over.expect_keys({"launch_us"});
  s.launch_us = in_range(over.at("launch_us"), 0, kMaxTimeUs);

  if (auto link = root.get("host_link")) {
    if (s.kind == Kind::kCpu) {
      link->fail("a CPU baseline has no host link (its inputs are in its own memory); remove host_link or set kind: gpu");
    }
    link->expect_keys({"bandwidth_gb_per_s", "latency_us"});
    s.host_link = HostLink{in_range(link->at("bandwidth_gb_per_s"), kMinRate, 1e6), in_range(link->at("latency_us"), 0, kMaxTimeUs)};
  } else if (s.kind == Kind::kGpu) {
    root.fail("missing required key 'host_link' (a GPU baseline moves inputs and outputs over PCIe: "
              "{bandwidth_gb_per_s, latency_us})");
  }
  if (auto link = root.get("chip_link")) {
    if (s.kind == Kind::kCpu) link->fail("chip_link is for GPUs joined by NVLink; a CPU baseline has none");
    link->expect_keys({"bandwidth_gb_per_s", "latency_ns", "ports"});
    models::ChipLinkParams c;
    c.bandwidth_gb_per_s = in_range(link->at("bandwidth_gb_per_s"), kMinRate, 1e6);
    c.latency_ns = in_range(link->at("latency_ns"), 0, kMaxTimeUs * 1e3);
    c.ports = static_cast<int>(link->at("ports").as_int(2, 64));
    c.topology = models::ChipLinkParams::Topology::kRing;  // NCCL's ring over the NVSwitch fabric
    s.chip_link = c;
  }
  if (auto power = root.get("power")) {
    power->expect_keys({"idle_w", "busy_w", "tdp_w", "host_w"});
    PowerSpec p;
    if (auto v = power->get("idle_w")) p.idle_w = in_range(*v, kMinW, kMaxW);
    if (auto v = power->get("tdp_w")) p.tdp_w = in_range(*v, kMinW, kMaxW);
    if (auto v = power->get("host_w")) p.host_w = in_range(*v, 0, kMaxW);
    if (auto v = power->get("busy_w")) {
      p.busy_w = in_range(*v, kMinW, kMaxW);
      p.basis = "measured";
    } else if (p.tdp_w > 0) {
      p.busy_w = p.tdp_w;
      p.basis = "tdp";
    } else {
      power->fail("needs busy_w (measured power while running) or tdp_w (used as the running power, labelled as TDP)");
    }
    // Running power below idle power would give a negative dynamic energy (issue 34 item 7).
    if (p.idle_w > 0 && p.busy_w < p.idle_w) {
      power->fail(std::string(p.basis == "tdp" ? "tdp_w (the running power)" : "busy_w") + " " + num(p.busy_w) +
                  " W is below idle_w " + num(p.idle_w) + " W; the running power must be at least the idle power");
    }
    s.power = p;
  }
  return s;
}

BaselineSpec load_baseline_spec(const std::filesystem::path& path) {
  BaselineSpec s = parse_baseline_spec(YamlNode::load_file(path), path.stem().string());
  s.source = path.string();
  return s;
}

std::vector<std::string> available_specs(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec) && e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tessera::baseline
