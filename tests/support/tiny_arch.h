#pragma once
// Small architecture configs for tests, built from YAML text so they go through
// the same validation as shipped configs.
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"

namespace tessera::test_support {

struct TinyArch {
  int rows = 4;
  int cols = 4;
  std::string dataflow = "ws";
  bool double_buffered = true;
  std::string ub_capacity = "64 KiB";
  int ub_read_bytes_per_cycle = 0;  // 0: default (rows)
  int accumulator_entries = 64;
  int fifo_depth = 4;
  double clock_mhz = 1000;               // 1 cycle = 1 ns: durations are easy to hand-derive
  double weight_bandwidth_gb_per_s = 1000;  // bytes per ns
  double weight_latency_ns = 0;
  std::string weight_fetch;  // empty: the default (exact)
  int pcie_generation = 3;
  int pcie_lanes = 16;
  double pcie_latency_ns = 0;
  int max_payload_bytes = 256;
  int tlp_overhead_bytes = 24;
  int vector_lanes = 4;
  int vector_latency_cycles = 0;
  std::string vector_extra;  // more vector_unit keys, e.g. "cycles_per_op: {transcendental: 4}"
  int issue_cycles = 0;
  bool ideal_memory = false;
  // The chip template (written only when not TPU v1's defaults).
  int cores = 1;
  int matrix_units = 1;
  std::string residency;  // e.g. "{inputs: device, outputs: device}"
  int dma_engines = 0;    // 0: no dma section
  bool host_link = true;

  std::string yaml() const {
    std::string y = "name: tiny\nclock_mhz: " + std::to_string(clock_mhz) + "\n";
    if (cores != 1) y += "cores: " + std::to_string(cores) + "\n";
    y += "array: {" + (matrix_units != 1 ? "count: " + std::to_string(matrix_units) + ", " : std::string()) +
         "rows: " + std::to_string(rows) + ", cols: " + std::to_string(cols) + ", dataflow: " + dataflow +
         ", double_buffered: " + (double_buffered ? "true" : "false") +
         ", mac_modes: [{a: int8, b: int8, rate: 1.0}, {a: int8, b: int16, rate: 0.5}, {a: int16, b: int8, rate: 0.5}, {a: int16, b: int16, rate: 0.25}]}\n";
    y += "unified_buffer: {capacity: " + ub_capacity;
    if (ub_read_bytes_per_cycle > 0) y += ", read_bytes_per_cycle: " + std::to_string(ub_read_bytes_per_cycle);
    y += "}\n";
    y += "accumulators: {entries: " + std::to_string(accumulator_entries) + "}\n";
    y += "weight_fifo: {depth_tiles: " + std::to_string(fifo_depth) + "}\n";
    y += "weight_memory: {capacity: 1 MiB, bandwidth_gb_per_s: " + std::to_string(weight_bandwidth_gb_per_s) +
         ", latency_ns: " + std::to_string(weight_latency_ns) + ", channels: 1" +
         (weight_fetch.empty() ? std::string() : ", fetch: " + weight_fetch) + "}\n";
    if (!residency.empty()) y += "residency: " + residency + "\n";
    if (dma_engines > 0) y += "dma: {engines: " + std::to_string(dma_engines) + "}\n";
    if (host_link) y += "pcie: {generation: " + std::to_string(pcie_generation) + ", lanes: " + std::to_string(pcie_lanes) +
         ", latency_ns: " + std::to_string(pcie_latency_ns) + ", max_payload_bytes: " + std::to_string(max_payload_bytes) +
         ", tlp_overhead_bytes: " + std::to_string(tlp_overhead_bytes) + "}\n";
    y += "vector_unit: {lanes: " + std::to_string(vector_lanes) +
         ", pipeline_latency_cycles: " + std::to_string(vector_latency_cycles) +
         (vector_extra.empty() ? std::string() : ", " + vector_extra) + "}\n";
    y += "controller: {issue_cycles: " + std::to_string(issue_cycles) + "}\n";
    if (ideal_memory) y += "ideal_memory: true\n";
    return y;
  }
  ArchConfig build() const { return parse_arch_config(YamlNode::load_string(yaml(), "tiny.yaml")); }
};

}  // namespace tessera::test_support
