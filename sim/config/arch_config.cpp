#include "sim/config/arch_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <string>

#include "models/memory/technologies.h"
#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "models/common/time_bounds.h"

namespace tessera {
namespace {

// Shortest round-trip text for a double in messages ("0.5", "1e-06", "700").
std::string num(double v) {
  std::ostringstream out;
  out.precision(12);
  out << v;
  return out.str();
}

// A number in (lo, hi]: the lower bound is exclusive (clock, bandwidth, rates).
double positive_double(const YamlNode& node, double hi) {
  const double v = node.as_double();
  if (!(v > 0.0) || v > hi) {
    node.fail("must be in (0, " + num(hi) + "], got " + node.raw().Scalar());
  }
  return v;
}

// A number >= 0 (latencies).
double non_negative_double(const YamlNode& node) {
  const double v = node.as_double();
  if (v < 0.0) node.fail("must be >= 0, got " + node.raw().Scalar());
  return v;
}

double non_negative_or(const YamlNode& map, std::string_view key, double fallback) {
  auto v = map.get(key);
  return v ? non_negative_double(*v) : fallback;
}

// "a, b, c" in registration order, for "is not one of" messages.
std::string join_names(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

Dtype parse_mac_dtype(const YamlNode& node) {
  // Operand types the array multiplies; int32 is an accumulator type, not an operand.
  return *parse_dtype(node.as_choice({"int8", "int16", "fp16", "bf16"}));
}

std::string mode_name(Dtype a, Dtype b) {
  return std::string(dtype_name(a)) + " x " + std::string(dtype_name(b));
}

ArrayConfig parse_array(const YamlNode& node) {
  node.expect_keys({"rows", "cols", "dataflow", "double_buffered", "mac_modes"});
  ArrayConfig out;
  out.rows = node.at("rows").as_int(1, 4096);
  out.cols = node.at("cols").as_int(1, 4096);
  const YamlNode dataflow = node.at("dataflow");
  const auto parsed = array::parse_dataflow(dataflow.as_string());
  if (!parsed) dataflow.fail("'" + dataflow.as_string() + "' is not one of: " + join_names(array::dataflows().names()));
  out.dataflow = *parsed;
  out.double_buffered = node.bool_or("double_buffered", true);

  auto modes = node.get("mac_modes");
  if (!modes) {
    out.mac_modes.push_back(MacMode{Dtype::kInt8, Dtype::kInt8, 1.0});
    return out;
  }
  std::vector<std::string> paths;  // where each accepted mode was given, for duplicate messages
  for (const YamlNode& e : modes->elements()) {
    e.expect_keys({"a", "b", "rate"});
    MacMode mode;
    mode.a = parse_mac_dtype(e.at("a"));
    mode.b = parse_mac_dtype(e.at("b"));
    mode.rate = positive_double(e.at("rate"), 1.0);
    for (size_t i = 0; i < out.mac_modes.size(); ++i) {
      if (out.mac_modes[i].a == mode.a && out.mac_modes[i].b == mode.b) {
        e.fail("duplicate mode " + mode_name(mode.a, mode.b) + " (already given at " + paths[i] +
               "); each (a, b) pair may appear once");
      }
    }
    out.mac_modes.push_back(mode);
    paths.push_back(e.path());
  }
  if (!out.find_mode(Dtype::kInt8, Dtype::kInt8)) {
    modes->fail("must contain the int8 x int8 mode ({a: int8, b: int8, rate: ...}); it defines the peak");
  }
  return out;
}

UnifiedBufferConfig parse_unified_buffer(const YamlNode& node, const ArrayConfig& array) {
  node.expect_keys({"capacity", "read_bytes_per_cycle", "write_bytes_per_cycle"});
  UnifiedBufferConfig out;
  const YamlNode cap = node.at("capacity");
  out.capacity_bytes = cap.as_bytes();
  const uint64_t tile_pair = 2ULL * static_cast<uint64_t>(array.rows) * static_cast<uint64_t>(array.cols);
  if (out.capacity_bytes < tile_pair) {
    cap.fail(std::to_string(out.capacity_bytes) + " bytes is smaller than one tile: must be >= " +
             std::to_string(tile_pair) + " bytes (2 * array.rows * array.cols: one int8 input tile plus "
             "one int8 output tile of " + std::to_string(array.rows) + " x " + std::to_string(array.cols) + ")");
  }
  out.read_bytes_per_cycle = node.int_or("read_bytes_per_cycle", array.rows, 1);
  out.write_bytes_per_cycle = node.int_or("write_bytes_per_cycle", array.cols, 1);
  return out;
}

AccumulatorConfig parse_accumulators(const YamlNode& node) {
  node.expect_keys({"entries", "width_bits"});
  AccumulatorConfig out;
  const YamlNode entries = node.at("entries");
  out.entries = entries.as_int();
  if (out.entries < 2) {
    entries.fail("must be >= 2 (the accumulators are used as two double-buffered halves), got " +
                 std::to_string(out.entries));
  }
  out.width_bits = node.int_or("width_bits", 32, 16, 64);
  return out;
}

WeightFifoConfig parse_weight_fifo(const YamlNode& node) {
  node.expect_keys({"depth_tiles"});
  WeightFifoConfig out;
  out.depth_tiles = node.at("depth_tiles").as_int(1, 1024);
  return out;
}

WeightMemoryConfig parse_weight_memory(const YamlNode& node, const ArrayConfig& array) {
  node.expect_keys({"technology", "capacity", "bandwidth_gb_per_s", "latency_ns", "channels", "fetch"});
  WeightMemoryConfig out;
  out.technology = "DRAM";
  if (auto tech = node.get("technology")) {
    out.technology = tech->as_string();
    std::vector<std::string_view> known;
    for (const auto& t : models::kWeightMemoryTechnologies) known.push_back(t.technology);
    if (std::find(known.begin(), known.end(), out.technology) == known.end()) {
      tech->fail("'" + out.technology + "' is not a weight-memory technology with a model; one of: " + join_names(known));
    }
  }
  const YamlNode cap = node.at("capacity");
  out.capacity_bytes = cap.as_bytes();
  const uint64_t tile = static_cast<uint64_t>(array.rows) * static_cast<uint64_t>(array.cols);
  if (out.capacity_bytes < tile) {
    cap.fail(std::to_string(out.capacity_bytes) + " bytes is smaller than one weight tile: must be >= " +
             std::to_string(tile) + " bytes (array.rows * array.cols int8 weights)");
  }
  out.bandwidth_gb_per_s = positive_double(node.at("bandwidth_gb_per_s"), 1e9);
  out.latency_ns = non_negative_or(node, "latency_ns", 100.0);
  out.channels = node.int_or("channels", 1, 1, 64);
  if (auto fetch = node.get("fetch")) {
    const std::string f = fetch->as_string();
    if (f == "tile") {
      out.fetch = WeightFetch::kTile;
    } else if (f != "exact") {
      fetch->fail("'" + f + "' is not one of: tile, exact");
    }
  }
  return out;
}

constexpr std::array<double, 6> kPcieGtPerS = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};

double encoding_efficiency(const std::string& encoding) {
  if (encoding == "8b10b") return 8.0 / 10.0;
  if (encoding == "128b130b") return 128.0 / 130.0;
  return 242.0 / 256.0;  // flit: 236 B TLP data + 6 B DLP of a 256 B FLIT carry payload (FEC/CRC excluded)
}

PcieConfig parse_pcie(const YamlNode& node) {
  node.expect_keys({"generation", "lanes", "encoding", "max_payload_bytes", "tlp_overhead_bytes", "latency_ns"});
  PcieConfig out;
  out.generation = node.at("generation").as_int(1, 6);
  out.transfer_rate_gt_per_s = kPcieGtPerS[static_cast<size_t>(out.generation - 1)];

  const YamlNode lanes = node.at("lanes");
  out.lanes = lanes.as_int();
  if (out.lanes != 1 && out.lanes != 2 && out.lanes != 4 && out.lanes != 8 && out.lanes != 16 && out.lanes != 32) {
    lanes.fail("must be one of 1, 2, 4, 8, 16, 32, got " + std::to_string(out.lanes));
  }

  const char* fallback = out.generation <= 2 ? "8b10b" : out.generation <= 5 ? "128b130b" : "flit";
  auto enc = node.get("encoding");
  out.encoding = enc ? enc->as_choice({"8b10b", "128b130b", "flit"}) : fallback;
  out.encoding_efficiency = encoding_efficiency(out.encoding);

  auto payload = node.get("max_payload_bytes");
  out.max_payload_bytes = payload ? payload->as_int(128, 4096) : 256;
  if (payload && (out.max_payload_bytes & (out.max_payload_bytes - 1)) != 0) {
    payload->fail("must be a power of two in [128, 4096], got " + std::to_string(out.max_payload_bytes));
  }
  out.tlp_overhead_bytes = node.int_or("tlp_overhead_bytes", 24, 0, 128);
  out.latency_ns = non_negative_or(node, "latency_ns", 1000.0);
  return out;
}

VectorUnitConfig parse_vector_unit(const std::optional<YamlNode>& node, const ArrayConfig& array) {
  VectorUnitConfig out;
  out.lanes = array.cols;
  out.pipeline_latency_cycles = 8;
  if (!node) return out;
  node->expect_keys({"lanes", "pipeline_latency_cycles"});
  out.lanes = node->int_or("lanes", array.cols, 1);
  out.pipeline_latency_cycles = node->int_or("pipeline_latency_cycles", 8, 0);
  return out;
}

ControllerConfig parse_controller(const std::optional<YamlNode>& node) {
  ControllerConfig out;
  if (!node) return out;
  node->expect_keys({"issue_cycles", "queue_depth"});
  out.issue_cycles = node->int_or("issue_cycles", 1, 0, 1000);
  out.queue_depth = node->int_or("queue_depth", 8, 1, 1024);
  return out;
}

// Simulated time is 64-bit picoseconds. Every single step a unit takes (one weight-tile
// request, one tile on the array, one pipeline fill, one link latency) must fit in
// models::kMaxStepPs, so that no duration is cast out of range and a run has headroom
// below models::kMaxSimulatedPs (runs that still pass it fail in the engine). The
// message names the key and the bound it must meet. `node` is the key's YAML node, or
// `fallback` (the section or clock_mhz) when the key was left at its default.
void check_step(const std::optional<YamlNode>& node, const YamlNode& fallback, const std::string& key,
                double step_ps, const std::string& what, const std::string& allowed) {
  if (step_ps <= models::kMaxStepPs) return;  // also rejects NaN/inf
  const std::string msg = "makes " + what + " take " + num(step_ps) + " ps; one step may take at most " +
                          models::kMaxStepText + " so that simulated time (64-bit picoseconds) has headroom: " + allowed;
  if (node) node->fail(node->raw().Scalar() + " " + msg);
  fallback.fail(key + " (default) " + msg);
}

void check_time_bounds(const YamlNode& root, const ArchConfig& cfg) {
  const double period_ps = 1e6 / cfg.clock_mhz;
  const double tile_cycles = static_cast<double>(std::max(cfg.array.rows, cfg.array.cols));
  const double tile_bytes = static_cast<double>(cfg.array.rows) * static_cast<double>(cfg.array.cols);
  const std::string tile = std::to_string(cfg.array.rows) + " x " + std::to_string(cfg.array.cols);
  const YamlNode clock = root.at("clock_mhz");
  const auto key = [&](std::string_view section, std::string_view k) -> std::optional<YamlNode> {
    auto s = root.get(section);
    return s ? s->get(k) : std::nullopt;
  };

  // The clock: one full tile at the int8 rate (max(rows, cols) cycles).
  check_step(clock, clock, "clock_mhz", tile_cycles * period_ps,
             "one " + num(tile_cycles) + "-cycle array tile",
             "must be >= " + num(tile_cycles * 1e6 / models::kMaxStepPs) + " for this array");
  // Each MAC mode: the same tile at that mode's rate.
  if (auto modes = key("array", "mac_modes")) {
    const auto elements = modes->elements();
    for (size_t i = 0; i < elements.size() && i < cfg.array.mac_modes.size(); ++i) {
      const double rate = cfg.array.mac_modes[i].rate;
      check_step(elements[i].at("rate"), clock, "rate", tile_cycles / rate * period_ps,
                 "one " + num(tile_cycles) + "-cycle array tile",
                 "must be >= " + num(tile_cycles * period_ps / models::kMaxStepPs) + " at " + num(cfg.clock_mhz) +
                     " MHz");
    }
  }
  // Unified-buffer ports: one tile of int8 data through each port.
  const double max_bpc_cycles = models::kMaxStepPs / period_ps;
  check_step(key("unified_buffer", "read_bytes_per_cycle"), root.at("unified_buffer"), "read_bytes_per_cycle",
             std::ceil(tile_bytes / static_cast<double>(cfg.unified_buffer.read_bytes_per_cycle)) * period_ps,
             "one " + tile + " tile through the read port",
             "must be >= " + num(std::ceil(tile_bytes / max_bpc_cycles)) + " at " + num(cfg.clock_mhz) + " MHz");
  check_step(key("unified_buffer", "write_bytes_per_cycle"), root.at("unified_buffer"), "write_bytes_per_cycle",
             std::ceil(tile_bytes / static_cast<double>(cfg.unified_buffer.write_bytes_per_cycle)) * period_ps,
             "one " + tile + " tile through the write port",
             "must be >= " + num(std::ceil(tile_bytes / max_bpc_cycles)) + " at " + num(cfg.clock_mhz) + " MHz");
  // Weight memory: one weight tile's transfer, and the first-byte latency.
  const double max_ns = models::kMaxStepPs / 1000.0;
  check_step(key("weight_memory", "bandwidth_gb_per_s"), root.at("weight_memory"), "bandwidth_gb_per_s",
             tile_bytes / cfg.weight_memory.bandwidth_gb_per_s * 1000.0,
             "one " + tile + " weight tile (" + num(tile_bytes) + " bytes)",
             "must be >= " + num(tile_bytes / max_ns) + " GB/s for this array");
  check_step(key("weight_memory", "latency_ns"), root.at("weight_memory"), "latency_ns",
             cfg.weight_memory.latency_ns * 1000.0, "one request's latency", "must be <= " + num(max_ns) + " ns");
  // The host link: its latency (its rate comes from generation and lanes, at least 200 MB/s,
  // so a tile's serialization is always short).
  check_step(key("pcie", "latency_ns"), root.at("pcie"), "latency_ns", cfg.pcie.latency_ns * 1000.0,
             "one transfer's latency", "must be <= " + num(max_ns) + " ns");
  // Per-instruction cycle counts of the vector unit and the controller.
  const double max_cycles = std::floor(models::kMaxStepPs / period_ps);
  check_step(key("vector_unit", "pipeline_latency_cycles"), clock, "vector_unit.pipeline_latency_cycles",
             static_cast<double>(cfg.vector_unit.pipeline_latency_cycles) * period_ps, "one pipeline fill",
             "must be <= " + num(max_cycles) + " at " + num(cfg.clock_mhz) + " MHz");
  check_step(key("controller", "issue_cycles"), clock, "controller.issue_cycles",
             static_cast<double>(cfg.controller.issue_cycles) * period_ps, "one instruction issue",
             "must be <= " + num(max_cycles) + " at " + num(cfg.clock_mhz) + " MHz");
}

}  // namespace

double ArchConfig::peak_tops(Dtype a, Dtype b) const {
  const MacMode* mode = array.find_mode(a, b);
  if (!mode) {
    throw InputError("arch '" + name + "' (" + source + "): array.mac_modes has no " + mode_name(a, b) +
                     " mode; add one to run this precision");
  }
  return static_cast<double>(array.rows) * static_cast<double>(array.cols) * mode->rate * 2.0 * clock_hz() /
         1e12;
}

ArchConfig parse_arch_config(const YamlNode& root) {
  root.expect_keys({"name", "clock_mhz", "array", "unified_buffer", "accumulators", "weight_fifo",
                    "weight_memory", "pcie", "vector_unit", "controller", "energy", "ideal_memory"});
  ArchConfig cfg;
  cfg.source = root.file();
  const YamlNode name = root.at("name");
  cfg.name = name.as_string();
  if (cfg.name.empty()) name.fail("must not be empty");
  cfg.clock_mhz = positive_double(root.at("clock_mhz"), 10000.0);
  cfg.array = parse_array(root.at("array"));
  cfg.unified_buffer = parse_unified_buffer(root.at("unified_buffer"), cfg.array);
  cfg.accumulators = parse_accumulators(root.at("accumulators"));
  cfg.weight_fifo = parse_weight_fifo(root.at("weight_fifo"));
  cfg.weight_memory = parse_weight_memory(root.at("weight_memory"), cfg.array);
  cfg.pcie = parse_pcie(root.at("pcie"));
  cfg.vector_unit = parse_vector_unit(root.get("vector_unit"), cfg.array);
  cfg.controller = parse_controller(root.get("controller"));
  cfg.ideal_memory = root.bool_or("ideal_memory", false);
  check_time_bounds(root, cfg);
  cfg.energy = parse_energy_config(root, cfg);
  return cfg;
}

ArchConfig load_arch_config(const std::filesystem::path& path) {
  ArchConfig cfg = parse_arch_config(YamlNode::load_composed(path));  // `base:` chains: docs/configs.md
  cfg.source = path.string();
  return cfg;
}

}  // namespace tessera
