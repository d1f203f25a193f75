#pragma once
// Host model files (configs/hosts/*.yaml, docs/serving.md "Host model"): the CPU time the
// host spends per request and per batch, its cores and its PCIe root complex. Strict,
// located errors as for architecture configs ("h.yaml:7:12: batch_cpu.tail.sigma: ...").
//
//   name: tpu-v1-host
//   cores: 36
//   scale: 1.0                 # multiplies every time below (what calibration sets)
//   request_cpu: {fixed_us: 5, tail: {distribution: lognormal, median_us: 2, sigma: 1}}
//   batch_cpu:   {fixed_us: 50, per_sample_us: 1, tail: {distribution: pareto, min_us: 10, alpha: 1.5}}
//   pcie_root_gb_per_s: 32
#include <filesystem>
#include <string>

#include "sim/serve/model.h"

namespace tessera {
class YamlNode;
}

namespace tessera::serve {

HostModel load_host_model(const std::filesystem::path& path);
HostModel parse_host_model(const YamlNode& root);

}  // namespace tessera::serve
