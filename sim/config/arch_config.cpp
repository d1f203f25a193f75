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

// Operand types a matrix unit may multiply: the operand types (sim/common/dtype.h; int4 for
// the weight operand only) but uint8, which the int8 mode multiplies (TPU v1's 8-bit MACs
// take signed and unsigned operands).
std::vector<std::string_view> mac_operand_names(bool weights) {
  std::vector<std::string_view> out;
  for (Dtype t : operand_dtypes(weights)) {
    if (t != Dtype::kUint8) out.push_back(dtype_name(t));
  }
  return out;
}

Dtype parse_mac_dtype(const YamlNode& node, bool weights) {
  const std::string s = node.as_string();
  const auto names = mac_operand_names(weights);
  if (std::find(names.begin(), names.end(), s) == names.end()) {
    node.fail("'" + s + "' is not a MAC " + (weights ? "weight" : "activation") + " operand type; one of: " +
              join_names(names));
  }
  return *parse_dtype(s);
}

std::string mode_name(Dtype a, Dtype b) {
  return std::string(dtype_name(a)) + " x " + std::string(dtype_name(b));
}

// One mac_modes entry: operands, rate, accumulator and the type it runs as.
MacMode parse_mac_mode(const YamlNode& e) {
  e.expect_keys({"a", "b", "rate", "accumulator", "runs_as"});
  MacMode mode;
  mode.a = parse_mac_dtype(e.at("a"), false);
  mode.b = parse_mac_dtype(e.at("b"), true);
  // Up to 16x the reference rate: narrower modes run several MACs per PE (TPU v5e: int8 at
  // twice the bf16 rate).
  mode.rate = positive_double(e.at("rate"), 16.0);
  const bool is_float = dtype_is_float(mode.a) || dtype_is_float(mode.b);
  // Float products accumulate in fp32 and integer ones in int32 (DESIGN.md §5); a narrower or
  // mismatched accumulator is not a mode any modelled chip has.
  mode.accumulator = is_float ? Dtype::kFp32 : Dtype::kInt32;
  if (auto acc = e.get("accumulator")) {
    const std::string want = is_float ? "fp32" : "int32";
    const std::string got = acc->as_string();
    if (got != want) {
      acc->fail("'" + got + "' is not a valid accumulator for the " + mode_name(mode.a, mode.b) + " mode: " +
                (is_float ? "float products accumulate in fp32 (32 bits)" : "integer products accumulate in int32 (32 bits)") +
                "; allowed: " + want);
    }
  }
  if (auto as = e.get("runs_as")) {
    const Dtype t = parse_mac_dtype(*as, false);
    if (dtype_is_float(t) != is_float) {
      as->fail("the " + mode_name(mode.a, mode.b) + " mode cannot run as " + std::string(dtype_name(t)) +
               ": a float mode runs as a float type and an integer mode as an integer type");
    }
    mode.runs_as = t;
  }
  return mode;
}

ArrayConfig parse_array(const YamlNode& node) {
  node.expect_keys({"count", "rows", "cols", "dataflow", "double_buffered", "mac_modes"});
  ArrayConfig out;
  out.count = node.int_or("count", 1, 1, 64);
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
    const MacMode mode = parse_mac_mode(e);
    for (size_t i = 0; i < out.mac_modes.size(); ++i) {
      if (out.mac_modes[i].a == mode.a && out.mac_modes[i].b == mode.b) {
        e.fail("duplicate mode " + mode_name(mode.a, mode.b) + " (already given at " + paths[i] +
               "); each (a, b) pair may appear once");
      }
    }
    out.mac_modes.push_back(mode);
    paths.push_back(e.path());
  }
  if (out.mac_modes.empty()) {
    modes->fail("must list at least one mode ({a: int8, b: int8, rate: 1.0}); the first, or int8 x int8 where given, defines the peak");
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

// ici: the chip-to-chip links (docs/configs.md "Chip-to-chip links"). Every key but the
// torus shape and wraparound is required: a link figure is a published number, not a default.
models::ChipLinkParams parse_ici(const YamlNode& node) {
  node.expect_keys({"bandwidth_gb_per_s", "latency_ns", "ports", "topology", "torus_x", "torus_y", "wraparound"});
  models::ChipLinkParams out;
  out.bandwidth_gb_per_s = positive_double(node.at("bandwidth_gb_per_s"), 1e6);
  out.latency_ns = node.at("latency_ns").as_double(0.0, 1e9);
  const YamlNode topology = node.at("topology");
  const bool torus = topology.as_choice({"ring", "torus_2d"}) == "torus_2d";
  out.topology = torus ? models::ChipLinkParams::Topology::kTorus2d : models::ChipLinkParams::Topology::kRing;
  const YamlNode ports = node.at("ports");
  out.ports = static_cast<int>(ports.as_int(1, 64));
  if (out.ports < (torus ? 4 : 2)) {
    ports.fail(std::string("must be >= ") + (torus ? "4 for torus_2d (a group of ports/4 links to each of the +x, -x, +y, -y neighbours)"
                                                   : "2 for ring (a group of ports/2 links to each of the two neighbours)") +
               ", got " + std::to_string(out.ports));
  }
  const auto tx = node.get("torus_x"), ty = node.get("torus_y");
  if ((tx || ty) && !torus) (tx ? *tx : *ty).fail("is only for topology: torus_2d (this chip's topology is ring)");
  if (tx && !ty) tx->fail("needs torus_y too (the slice is torus_x x torus_y chips)");
  if (ty && !tx) ty->fail("needs torus_x too (the slice is torus_x x torus_y chips)");
  if (tx) {
    out.torus_x = static_cast<int>(tx->as_int(1, 1024));
    out.torus_y = static_cast<int>(ty->as_int(1, 1024));
  }
  out.wraparound = node.bool_or("wraparound", true);
  return out;
}

VectorUnitConfig parse_vector_unit(const std::optional<YamlNode>& node, const ArrayConfig& array) {
  VectorUnitConfig out;
  out.lanes = array.cols;
  out.pipeline_latency_cycles = 8;
  if (!node) return out;
  node->expect_keys({"lanes", "sublanes", "lane_bytes", "pipeline_latency_cycles", "cycles_per_op", "packs_narrow_types"});
  out.lanes = node->int_or("lanes", array.cols, 1, 1 << 20);
  out.sublanes = node->int_or("sublanes", 1, 1, 1024);
  out.lane_bytes = node->int_or("lane_bytes", 1, 1, 8);
  out.pipeline_latency_cycles = node->int_or("pipeline_latency_cycles", 8, 0);
  out.packs_narrow_types = node->bool_or("packs_narrow_types", true);
  if (const auto rates = node->get("cycles_per_op")) {
    if (!rates->is_map()) rates->fail("expected a map of function class to cycles per element operation");
    std::vector<std::string> classes;
    for (VectorClass c : kAllVectorClasses) classes.emplace_back(vector_class_name(c));
    rates->expect_keys(classes);
    for (VectorClass c : kAllVectorClasses) {
      // Bounded: 1/64 (a wider path than the lanes) to 1024 cycles per operation.
      out.cycles_per_op[static_cast<size_t>(c)] = rates->double_or(vector_class_name(c), 1.0, 1.0 / 64, 1024.0);
    }
  }
  return out;
}

ControllerConfig parse_controller(const std::optional<YamlNode>& node) {
  ControllerConfig out;
  if (!node) return out;
  node->expect_keys({"issue_cycles", "queue_depth", "launch_overhead_ns"});
  out.issue_cycles = node->int_or("issue_cycles", 1, 0, 1000);
  out.queue_depth = node->int_or("queue_depth", 8, 1, 1024);
  out.launch_overhead_ns = node->double_or("launch_overhead_ns", 0.0, 0.0, 1e9);
  return out;
}

DmaConfig parse_dma(const std::optional<YamlNode>& node) {
  DmaConfig out;
  if (!node) return out;
  node->expect_keys({"engines", "latency_ns", "bandwidth_gb_per_s"});
  out.engines = node->int_or("engines", 1, 1, 64);
  out.latency_ns = node->double_or("latency_ns", 0.0, 0.0, 1e9);
  if (auto bw = node->get("bandwidth_gb_per_s")) out.bandwidth_gb_per_s = positive_double(*bw, 1e9);
  return out;
}

Residency parse_residency_value(const YamlNode& node) {
  return node.as_choice({"host", "device"}) == "host" ? Residency::kHost : Residency::kDevice;
}

// residency: {inputs, weights, outputs}; defaults: inputs and outputs over the host link where
// the chip has one (TPU v1's coprocessor shape), else device memory; weights in device
// (weight) memory. Weights in host memory are fetched over the host link.
ResidencyConfig parse_residency(const std::optional<YamlNode>& node, const std::optional<YamlNode>& pcie) {
  ResidencyConfig out;
  const Residency fallback = pcie ? Residency::kHost : Residency::kDevice;
  out.inputs = out.outputs = fallback;
  if (!node) return out;
  node->expect_keys({"inputs", "weights", "outputs"});
  if (auto v = node->get("inputs")) out.inputs = parse_residency_value(*v);
  if (auto v = node->get("weights")) out.weights = parse_residency_value(*v);
  if (auto v = node->get("outputs")) out.outputs = parse_residency_value(*v);
  for (const char* k : {"inputs", "weights", "outputs"}) {
    auto v = node->get(k);
    if (v && !pcie && parse_residency_value(*v) == Residency::kHost) {
      v->fail("'host' needs a host link, and this chip has no `pcie:` section; allowed: device");
    }
  }
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
  // A section by either of its names (parse_arch_config has checked that one is given).
  const auto sec = [&](std::string_view section) -> std::optional<YamlNode> {
    const std::string_view alias = section == "array"            ? "matrix_units"
                                   : section == "unified_buffer" ? "scratchpad"
                                   : section == "weight_memory"  ? "device_memory"
                                                                 : "";
    auto s = root.get(section);
    return s || alias.empty() ? s : root.get(alias);
  };
  const auto key = [&](std::string_view section, std::string_view k) -> std::optional<YamlNode> {
    auto s = sec(section);
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
  check_step(key("unified_buffer", "read_bytes_per_cycle"), *sec("unified_buffer"), "read_bytes_per_cycle",
             std::ceil(tile_bytes / static_cast<double>(cfg.unified_buffer.read_bytes_per_cycle)) * period_ps,
             "one " + tile + " tile through the read port",
             "must be >= " + num(std::ceil(tile_bytes / max_bpc_cycles)) + " at " + num(cfg.clock_mhz) + " MHz");
  check_step(key("unified_buffer", "write_bytes_per_cycle"), *sec("unified_buffer"), "write_bytes_per_cycle",
             std::ceil(tile_bytes / static_cast<double>(cfg.unified_buffer.write_bytes_per_cycle)) * period_ps,
             "one " + tile + " tile through the write port",
             "must be >= " + num(std::ceil(tile_bytes / max_bpc_cycles)) + " at " + num(cfg.clock_mhz) + " MHz");
  // Weight memory: one weight tile's transfer, and the first-byte latency.
  const double max_ns = models::kMaxStepPs / 1000.0;
  check_step(key("weight_memory", "bandwidth_gb_per_s"), *sec("weight_memory"), "bandwidth_gb_per_s",
             tile_bytes / cfg.weight_memory.bandwidth_gb_per_s * 1000.0,
             "one " + tile + " weight tile (" + num(tile_bytes) + " bytes)",
             "must be >= " + num(tile_bytes / max_ns) + " GB/s for this array");
  check_step(key("weight_memory", "latency_ns"), *sec("weight_memory"), "latency_ns",
             cfg.weight_memory.latency_ns * 1000.0, "one request's latency", "must be <= " + num(max_ns) + " ns");
  // The host link: its latency (its rate comes from generation and lanes, at least 200 MB/s,
  // so a tile's serialization is always short).
  if (auto pcie = root.get("pcie")) {
    check_step(key("pcie", "latency_ns"), *pcie, "latency_ns", cfg.pcie.latency_ns * 1000.0, "one transfer's latency",
               "must be <= " + num(max_ns) + " ns");
  }
  if (auto dma = root.get("dma")) {
    check_step(key("dma", "latency_ns"), *dma, "latency_ns", cfg.dma.latency_ns * 1000.0, "one DMA transfer's latency",
               "must be <= " + num(max_ns) + " ns");
  }
  if (auto ctl = root.get("controller")) {
    check_step(key("controller", "launch_overhead_ns"), *ctl, "launch_overhead_ns",
               cfg.controller.launch_overhead_ns * 1000.0, "the program's launch", "must be <= " + num(max_ns) + " ns");
  }
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

namespace {
double peak_at(const ArchConfig& c, const MacMode& mode) {
  return static_cast<double>(c.active_matrix_units()) * static_cast<double>(c.array.rows) *
         static_cast<double>(c.array.cols) * mode.rate * 2.0 * c.clock_hz() / 1e12;
}
}  // namespace

double ArchConfig::peak_tops(Dtype a, Dtype b) const {
  const MacMode* mode = array.find_mode(a, b);
  if (!mode) {
    throw InputError("arch '" + name + "' (" + source + "): array.mac_modes has no " + mode_name(a, b) +
                     " mode; add one to run this precision");
  }
  return peak_at(*this, *mode);
}

double ArchConfig::peak_tops() const { return peak_at(*this, array.reference_mode()); }

std::string_view residency_name(Residency r) { return r == Residency::kHost ? "host" : "device"; }

void apply_residency_override(ResidencyConfig& r, const std::string& spec, const std::string& flag) {
  auto value = [&](const std::string& v, const std::string& what) {
    if (v == "host") return Residency::kHost;
    if (v == "device") return Residency::kDevice;
    throw InputError(flag + ": '" + v + "' is not a residency for " + what + "; allowed: host, device");
  };
  if (spec.find('=') == std::string::npos) {
    r.inputs = r.outputs = value(spec, "inputs and outputs");
    return;
  }
  size_t pos = 0;
  while (pos <= spec.size()) {
    const size_t comma = std::min(spec.find(',', pos), spec.size());
    const std::string item = spec.substr(pos, comma - pos);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      throw InputError(flag + ": '" + item + "' is not CLASS=host|device; classes: inputs, weights, outputs");
    }
    const std::string cls = item.substr(0, eq), v = item.substr(eq + 1);
    if (cls == "inputs") {
      r.inputs = value(v, cls);
    } else if (cls == "outputs") {
      r.outputs = value(v, cls);
    } else if (cls == "weights") {
      r.weights = value(v, cls);
    } else {
      throw InputError(flag + ": '" + cls + "' is not a tensor class; allowed: inputs, weights, outputs");
    }
    pos = comma + 1;
  }
}

// One of two names for a section (the chip template's and TPU v1's): exactly one may be given.
YamlNode section(const YamlNode& root, std::string_view name, std::string_view alias) {
  auto a = root.get(name), b = root.get(alias);
  if (a && b) b->fail("gives the same section as `" + std::string(name) + "` (line " + a->location() + "): use one of them");
  if (b) return *b;
  return root.at(name);
}

ArchConfig parse_arch_config(const YamlNode& root) {
  root.expect_keys({"name", "clock_mhz", "cores", "megacore", "array", "matrix_units", "unified_buffer", "scratchpad",
                    "accumulators", "weight_fifo", "weight_memory", "device_memory", "pcie", "residency", "dma",
                    "vector_unit", "controller", "energy", "ideal_memory", "ici"});
  ArchConfig cfg;
  cfg.source = root.file();
  const YamlNode name = root.at("name");
  cfg.name = name.as_string();
  if (cfg.name.empty()) name.fail("must not be empty");
  cfg.clock_mhz = positive_double(root.at("clock_mhz"), 10000.0);
  cfg.cores = root.int_or("cores", 1, 1, 64);
  cfg.megacore = root.bool_or("megacore", true);
  cfg.array = parse_array(section(root, "array", "matrix_units"));
  cfg.unified_buffer = parse_unified_buffer(section(root, "unified_buffer", "scratchpad"), cfg.array);
  cfg.accumulators = parse_accumulators(root.at("accumulators"));
  cfg.weight_fifo = parse_weight_fifo(root.at("weight_fifo"));
  cfg.weight_memory = parse_weight_memory(section(root, "weight_memory", "device_memory"), cfg.array);
  const auto pcie = root.get("pcie");
  cfg.has_host_link = pcie.has_value();
  if (pcie) cfg.pcie = parse_pcie(*pcie);
  cfg.residency = parse_residency(root.get("residency"), pcie);
  if (auto ici = root.get("ici")) {
    cfg.ici = parse_ici(*ici);
    cfg.has_chip_links = true;
  }
  cfg.dma = parse_dma(root.get("dma"));
  cfg.vector_unit = parse_vector_unit(root.get("vector_unit"), cfg.array);
  cfg.controller = parse_controller(root.get("controller"));
  cfg.ideal_memory = root.bool_or("ideal_memory", false);
  cfg.chip_template = root.has("cores") || root.has("megacore") || root.has("matrix_units") || root.has("scratchpad") ||
                      root.has("device_memory") || !pcie || root.has("residency") || root.has("dma") ||
                      cfg.array.count != 1 || cfg.controller.launch_overhead_ns > 0 || cfg.vector_unit.sublanes != 1 ||
                      cfg.vector_unit.lane_bytes != 1 || !cfg.vector_unit.packs_narrow_types ||
                      cfg.vector_unit.cycles_per_op != VectorUnitConfig{}.cycles_per_op;
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
