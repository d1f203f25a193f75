#include "models/baseline/model.h"

#include <algorithm>

namespace tessera::baseline {

int64_t Workload::total_weights() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.weights;
  return n;
}

int64_t Workload::total_macs() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.matrix ? l.macs : 0;
  return n;
}

Estimate estimate(const BaselineSpec& spec, const Workload& work, Precision precision) {
  Estimate out;
  out.precision = precision;
  const double peak_ops = spec.peak_tops_at(precision) * 1e12;
  const double elem = static_cast<double>(precision_bytes(precision));
  const double dram_bw = spec.memory_bandwidth_gb_per_s * 1e9 * spec.memory_efficiency;
  const double chip_bw = spec.on_chip_bandwidth_gb_per_s * 1e9;
  const double half_chip = static_cast<double>(spec.on_chip_bytes) / 2.0;
  out.weight_bytes = static_cast<double>(work.total_weights()) * elem;
  out.weights_on_chip = out.weight_bytes <= half_chip;

  auto place = [&](double bytes, bool host, double& dram, double& chip) {
    if (host || bytes > half_chip) {
      dram += bytes;
    } else {
      chip += bytes;
    }
  };

  out.layers.reserve(work.layers.size());
  for (const LayerWork& l : work.layers) {
    LayerEstimate e;
    if (l.layout_only) {
      e.bound = "none";
      out.layers.push_back(e);
      continue;
    }
    if (l.matrix) {
      e.tile = static_cast<int>(spec.efficiency.best(l.m, l.k, l.n));
      e.efficiency = spec.efficiency.at(spec.efficiency.tiles[static_cast<size_t>(e.tile)], l.m, l.k, l.n);
      const double ops = 2.0 * static_cast<double>(l.macs);
      e.compute_s = e.efficiency > 0 ? ops / (peak_ops * e.efficiency) : 0.0;
      const double wbytes = static_cast<double>(l.weights) * elem;
      (out.weights_on_chip ? e.on_chip_bytes : e.dram_bytes) += wbytes;
    }
    for (const TensorUse& in : l.inputs) place(static_cast<double>(in.elements) * elem, in.host, e.dram_bytes, e.on_chip_bytes);
    place(static_cast<double>(l.output.elements) * elem, l.output.host, e.dram_bytes, e.on_chip_bytes);
    e.dram_s = e.dram_bytes / dram_bw;
    e.on_chip_s = e.on_chip_bytes / chip_bw;
    e.overhead_s = spec.launch_us * 1e-6;
    const double kernel = std::max({e.compute_s, e.dram_s, e.on_chip_s});
    e.latency_s = kernel + e.overhead_s;
    if (kernel < e.overhead_s) {
      e.bound = "overhead";
    } else if (kernel == e.compute_s) {
      e.bound = "compute";
    } else if (kernel == e.dram_s) {
      e.bound = "memory";
    } else {
      e.bound = "on_chip";
    }
    out.latency_s += e.latency_s;
    out.dram_bytes += e.dram_bytes;
    out.layers.push_back(e);
  }

  if (spec.host_link) {
    const double link_bw = spec.host_link->bandwidth_gb_per_s * 1e9;
    const double lat = spec.host_link->latency_us * 1e-6;
    HostLinkEstimate& h = out.host_link;
    h.to_device_bytes = static_cast<double>(work.host_input_elements) * elem;
    h.to_host_bytes = static_cast<double>(work.host_output_elements) * elem;
    if (h.to_device_bytes > 0) h.to_device_s = lat + h.to_device_bytes / link_bw;
    if (h.to_host_bytes > 0) h.to_host_s = lat + h.to_host_bytes / link_bw;
    out.latency_s += h.total_s();
  }
  return out;
}

}  // namespace tessera::baseline
