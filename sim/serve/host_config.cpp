#include "sim/serve/host_config.h"

#include "sim/common/yaml_reader.h"

namespace tessera::serve {
namespace {

constexpr double kUs = 1e-6;
constexpr double kMaxUs = 1e9;  // 1000 s: far above any host time, far below overflow

Tail parse_tail(const YamlNode& n) {
  Tail t;
  const std::string kind = n.at("distribution").as_choice({"none", "exponential", "lognormal", "pareto"});
  if (kind == "none") {
    n.expect_keys({"distribution"});
  } else if (kind == "exponential") {
    n.expect_keys({"distribution", "mean_us"});
    t.kind = Tail::Kind::kExponential;
    t.scale_s = n.at("mean_us").as_double(0, kMaxUs) * kUs;
  } else if (kind == "lognormal") {
    n.expect_keys({"distribution", "median_us", "sigma"});
    t.kind = Tail::Kind::kLognormal;
    t.scale_s = n.at("median_us").as_double(0, kMaxUs) * kUs;
    t.shape = n.at("sigma").as_double(0, 5);
  } else {
    n.expect_keys({"distribution", "min_us", "alpha"});
    t.kind = Tail::Kind::kPareto;
    t.scale_s = n.at("min_us").as_double(0, kMaxUs) * kUs;
    const auto alpha = n.at("alpha");
    t.shape = alpha.as_double(0, 100);
    if (!(t.shape > 1)) alpha.fail("must be > 1 (a Pareto tail with alpha <= 1 has no mean), got " + std::to_string(t.shape));
  }
  return t;
}

HostTime parse_time(const YamlNode& n) {
  n.expect_keys({"fixed_us", "per_sample_us", "tail"});
  HostTime h;
  h.fixed_s = n.double_or("fixed_us", 0, 0, kMaxUs) * kUs;
  h.per_sample_s = n.double_or("per_sample_us", 0, 0, kMaxUs) * kUs;
  if (auto t = n.get("tail")) h.tail = parse_tail(*t);
  return h;
}

}  // namespace

HostModel parse_host_model(const YamlNode& root) {
  if (!root.is_map()) root.fail("expected a mapping (a host model: name, cores, request_cpu, batch_cpu, ...)");
  root.expect_keys({"name", "description", "cores", "scale", "request_cpu", "batch_cpu", "pcie_root_gb_per_s"});
  HostModel h;
  h.name = root.at("name").as_string();
  h.source = root.file();
  h.cores = root.int_or("cores", 0, 0, 1 << 20);
  if (auto n = root.get("request_cpu")) h.request_cpu = parse_time(*n);
  if (auto n = root.get("batch_cpu")) h.batch_cpu = parse_time(*n);
  // 0: no shared root complex; otherwise at least 1 MB/s, so a transfer's hold time stays finite.
  if (auto n = root.get("pcie_root_gb_per_s")) {
    const double gb = n->as_double(0, 1e6);
    if (gb != 0 && gb < 1e-3) n->fail("must be 0 (no shared root complex) or in [0.001, 1e+06] GB/s, got " + n->raw().Scalar());
    h.pcie_root_bytes_per_s = gb * 1e9;
  }
  const double scale = root.double_or("scale", 1, 0, 1e6);
  h = h.scaled(scale);
  h.scale = scale;
  return h;
}

HostModel load_host_model(const std::filesystem::path& path) { return parse_host_model(YamlNode::load_file(path)); }

}  // namespace tessera::serve
