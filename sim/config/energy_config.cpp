#include "sim/config/energy_config.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/config/energy_tables.h"

namespace tessera {

namespace et = energy_tables;

double EnergyConfig::mac_pj(Dtype a, Dtype b) const {
  for (const MacEnergy& m : mac) {
    if (m.a == a && m.b == b) return m.pj;
  }
  return 0;
}

double EnergyConfig::idle_mac_pj(Dtype a, Dtype b) const {
  for (const MacEnergy& m : mac) {
    if (m.a == a && m.b == b) return m.idle_pj;
  }
  return 0;
}

double EnergyConfig::vector_op_pj(std::string_view function, EnergyClass cls) const {
  if (auto it = vector_pj.find(function); it != vector_pj.end()) return it->second;
  // `default` covers every function the config does not name; without it, the built-in classes.
  if (vector_default_pj) return *vector_default_pj;
  return et::vector_op_pj(cls) * vector_builtin_scale;
}

AreaBreakdown area_breakdown(const EnergyConfig& e, int64_t rows, int64_t cols) {
  AreaBreakdown a;
  a.matrix_unit = static_cast<double>(rows) * static_cast<double>(cols) * e.pe_area_um2 * e.pe_overhead / 1e6;
  a.unified_buffer = e.unified_buffer.area_mm2 * e.sram_overhead;
  a.accumulators = e.accumulators.area_mm2 * e.sram_overhead;
  a.weight_fifo = e.weight_fifo.area_mm2 * e.sram_overhead;
  const double modelled = a.matrix_unit + a.unified_buffer + a.accumulators + a.weight_fifo;
  a.other = modelled * e.other_fraction / (1 - e.other_fraction);
  return a;
}

namespace {

std::string num(double v) {
  std::ostringstream out;
  out.precision(4);
  out << v;
  return out.str();
}

std::string mode_key(Dtype a, Dtype b) { return std::string(dtype_name(a)) + "x" + std::string(dtype_name(b)); }

std::string bytes_text(uint64_t b) {
  if (b >= (1ULL << 20) && b % (1ULL << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1ULL << 10) && b % (1ULL << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

// Where a group's values were published: node and supply. A group without node_nm/vdd_v
// gives its values at the config's own node and supply (no scaling).
struct Origin {
  double node_nm;
  double vdd_v;
};

class Resolver {
 public:
  Resolver(const YamlNode& root, const std::optional<YamlNode>& energy, EnergyConfig& out)
      : root_(root), energy_(energy), out_(out) {}

  const YamlNode& root() const { return root_; }
  std::optional<YamlNode> section(std::string_view key) const { return energy_ ? energy_->get(key) : std::nullopt; }

  Origin origin(const std::optional<YamlNode>& group) const {
    Origin o{out_.technology_nm, out_.vdd_v};
    if (!group) return o;
    if (auto n = group->get("node_nm")) o.node_nm = n->as_double(et::kMinNodeNm, et::kMaxNodeNm);
    if (auto v = group->get("vdd_v")) o.vdd_v = v->as_double(0.5, 1.5);
    return o;
  }
  double logic(const Origin& o) const {
    return et::logic_energy_scale(o.node_nm, out_.technology_nm, out_.vdd_v) * et::vdd_energy_scale(o.vdd_v, out_.vdd_v);
  }
  double sram(const Origin& o) const {
    return et::sram_energy_scale(o.node_nm, out_.technology_nm, out_.vdd_v) * et::vdd_energy_scale(o.vdd_v, out_.vdd_v);
  }
  double sram_leakage(const Origin& o) const {
    return et::sram_leakage_scale(o.node_nm, out_.technology_nm, out_.vdd_v) * et::vdd_energy_scale(o.vdd_v, out_.vdd_v);
  }
  std::string rule(const char* kind, const Origin& o, double factor) const {
    if (o.node_nm == out_.technology_nm && o.vdd_v == out_.vdd_v) return "at the config's node and supply";
    return std::string(kind) + " " + num(o.node_nm) + " -> " + num(out_.technology_nm) + " nm, " + num(o.vdd_v) +
           " -> " + num(out_.vdd_v) + " V: x" + num(factor);
  }

  void defaulted(const std::string& key) { out_.defaulted.push_back("energy." + key); }
  void source(std::string group, std::string text) { out_.sources.emplace_back(std::move(group), std::move(text)); }

  // A number in [0, hi] at `group.key`, or nullopt when absent.
  static std::optional<double> value(const std::optional<YamlNode>& group, std::string_view key, double hi = 1e12) {
    if (!group) return std::nullopt;
    auto v = group->get(key);
    if (!v) return std::nullopt;
    return v->as_double(0.0, hi);
  }

 private:
  const YamlNode& root_;
  const std::optional<YamlNode>& energy_;
  EnergyConfig& out_;
};

[[noreturn]] void bad_pair(const YamlNode& at, const std::string& key) {
  at.fail("'" + key + "' is not a precision pair AxB with A and B in " + dtype_names_text(operand_dtypes(true)) +
          " (e.g. int8xint16)");
}

std::pair<Dtype, Dtype> parse_pair(const YamlNode& at, const std::string& key) {
  const size_t x = key.find('x');
  if (x == std::string::npos) bad_pair(at, key);
  const auto a = parse_dtype(key.substr(0, x)), b = parse_dtype(key.substr(x + 1));
  if (!a || !b || *a == Dtype::kInt32 || *b == Dtype::kInt32) bad_pair(at, key);
  if (dtype_weights_only(*a)) at.fail("'" + key + "': " + std::string(dtype_name(*a)) + " is for weights only (the B of AxB)");
  return {*a, *b};
}

// A `{int8xint8: 0.3, ...}` map, keys checked.
std::map<std::pair<Dtype, Dtype>, double> pair_map(const std::optional<YamlNode>& node, double hi) {
  std::map<std::pair<Dtype, Dtype>, double> out;
  if (!node) return out;
  if (!node->is_map()) node->fail("must be a map of precision pairs to numbers, e.g. {int8xint8: 0.3}");
  for (const std::string& k : node->keys()) {
    const YamlNode v = node->at(k);
    out[parse_pair(v, k)] = v.as_double(0.0, hi);
  }
  return out;
}

// ---------------------------------------------------------------- mac
void parse_mac(Resolver& r, const ArchConfig& arch, EnergyConfig& e) {
  const auto group = r.section("mac");
  if (group) group->expect_keys({"node_nm", "vdd_v", "pj", "idle_fraction"});
  const Origin given = r.origin(group);
  const double given_scale = r.logic(given);
  const Origin horowitz{et::kHorowitzNodeNm, et::kHorowitzVdd};
  const double builtin_scale = r.logic(horowitz);
  const auto pj_node = group ? group->get("pj") : std::nullopt;
  const auto explicit_pj = pair_map(pj_node, 1e6);
  auto idle = Resolver::value(group, "idle_fraction", 1.0);
  if (!idle) {
    // UNCONFIRMED placeholder: a PE holding no useful weight still passes its input and
    // partial sum on, but its multiplier and adder see a zero weight and switch little.
    idle = 0.1;
    r.defaulted("mac.idle_fraction");
  }

  auto native = [&](Dtype a, Dtype b) -> std::optional<double> {
    if (auto it = explicit_pj.find({a, b}); it != explicit_pj.end()) return it->second * given_scale;
    if (auto v = et::native_mac_pj(mode_key(a, b))) return *v * builtin_scale;
    return std::nullopt;
  };
  const double int8 = *native(Dtype::kInt8, Dtype::kInt8);
  bool any_default = false;
  for (const MacMode& m : arch.array.mac_modes) {
    MacEnergy me{m.a, m.b, 0, 0};
    const std::string key = mode_key(m.a, m.b);
    if (auto it = explicit_pj.find({m.a, m.b}); it != explicit_pj.end()) {
      me.pj = it->second * given_scale;
    } else if (m.rate < 1.0 && !dtype_is_float(m.a) && !dtype_is_float(m.b)) {
      // A slower integer mode runs as passes of the int8 x int8 MAC (TPU v1: half speed with
      // one 16-bit operand, quarter speed with two): 1/rate passes, each an int8 MAC.
      me.pj = int8 / m.rate;
      r.defaulted("mac.pj." + key);
      any_default = true;
    } else if (auto v = native(m.a, m.b)) {
      me.pj = *v;
      r.defaulted("mac.pj." + key);
      any_default = true;
    } else {
      r.root().at("array").at("mac_modes").fail(
          "the " + key + " mode has no published MAC energy to default to: give energy.mac.pj." + key +
          " (pJ per MAC, at energy.mac.node_nm)");
    }
    me.idle_pj = me.pj * *idle;
    e.mac.push_back(me);
  }
  std::string src;
  if (!explicit_pj.empty()) src = "config values, " + r.rule("Stillmaker-Baas logic", given, given_scale);
  if (any_default) {
    src += std::string(src.empty() ? "" : "; ") + "defaults: Horowitz ISSCC 2014 (45 nm, 0.9 V), " +
           r.rule("Stillmaker-Baas logic", horowitz, builtin_scale) +
           "; slower integer modes: the int8xint8 MAC once per pass (1/rate)";
  }
  src += "; idle PEs: x" + num(*idle) + " of a useful MAC";
  r.source("mac", src);
}

// ---------------------------------------------------------------- register
// Returns the energy per bit written before the toggle fraction (a clocked flop's energy).
double parse_register(Resolver& r, EnergyConfig& e) {
  const auto group = r.section("register");
  if (group) group->expect_keys({"node_nm", "vdd_v", "pj_per_bit", "toggle_fraction"});
  auto toggle = Resolver::value(group, "toggle_fraction", 1.0);
  if (!toggle) {
    // A bit of uncorrelated random data changes with probability 1/2 from one value to the next.
    toggle = 0.5;
    r.defaulted("register.toggle_fraction");
  }
  std::string src;
  if (auto v = Resolver::value(group, "pj_per_bit", 1e3)) {
    const Origin o = r.origin(group);
    e.register_pj_per_bit = *v * r.logic(o);
    src = "config value, " + r.rule("Stillmaker-Baas logic", o, r.logic(o));
  } else {
    const Origin aladdin{et::kAladdinNodeNm, et::kHorowitzVdd};
    const double family = et::register_pj_per_bit_horowitz_family(et::kHorowitzVdd);
    e.register_pj_per_bit = family * r.logic(aladdin);
    r.defaulted("register.pj_per_bit");
    src = "default: Aladdin 0.009 pJ per register bit (40 nm; Vdd assumed 0.9 V) in Horowitz's family (x Horowitz / "
          "Aladdin 32-bit add = " + num(family) + " pJ), " + r.rule("Stillmaker-Baas logic", aladdin, r.logic(aladdin));
  }
  const double per_bit = e.register_pj_per_bit;
  e.register_pj_per_bit *= *toggle;
  r.source("register", src + "; x" + num(*toggle) + " of the bits written toggle");
  return per_bit;
}

// ---------------------------------------------------------------- vector
void parse_vector(Resolver& r, EnergyConfig& e) {
  const auto group = r.section("vector");
  if (group) group->expect_keys({"node_nm", "vdd_v", "pj_per_op"});
  const Origin o = r.origin(group);
  const Origin horowitz{et::kHorowitzNodeNm, et::kHorowitzVdd};
  e.vector_builtin_scale = r.logic(horowitz);
  const auto ops = group ? group->get("pj_per_op") : std::nullopt;
  std::string src;
  if (ops) {
    if (!ops->is_map()) ops->fail("must be a map of vector functions to pJ per element operation, e.g. {default: 0.1, exp: 4.6}");
    for (const std::string& k : ops->keys()) {
      const double v = ops->at(k).as_double(0.0, 1e6) * r.logic(o);
      if (k == "default") {
        e.vector_default_pj = v;
      } else {
        e.vector_pj[k] = v;
      }
    }
    src = "config values, " + r.rule("Stillmaker-Baas logic", o, r.logic(o)) + "; ";
  }
  if (!e.vector_default_pj) {
    r.defaulted("vector.pj_per_op");
    src += "defaults: Horowitz ISSCC 2014 (45 nm) per function class (32-bit add 0.1 pJ; requantize and scaling "
           "ops 32-bit multiply-add 3.2 pJ; transcendental ops fp32 multiply-add 4.6 pJ), " +
           r.rule("Stillmaker-Baas logic", horowitz, e.vector_builtin_scale);
  }
  r.source("vector", src);
}

// ---------------------------------------------------------------- SRAMs
SramEnergy sram_buffer(Resolver& r, const std::optional<YamlNode>& sram_group, std::string_view name,
                       uint64_t capacity, int64_t access_bytes, int64_t instances, et::SramCell default_cell) {
  const auto group = sram_group ? sram_group->get(name) : std::nullopt;
  if (group) {
    group->expect_keys({"cell", "node_nm", "vdd_v", "read_pj_per_byte", "write_pj_per_byte", "leakage_w", "area_mm2"});
  }
  et::SramCell cell = default_cell;
  if (group) {
    if (auto c = group->get("cell")) cell = *et::parse_sram_cell(c->as_choice({"hp", "lop", "lstp"}));
  }
  const et::SramFigures t = et::sram_at_table_node(capacity, access_bytes, cell);
  const Origin table{et::kSramTableNodeNm, et::kSramTableVdd};
  const Origin given = r.origin(group);
  const std::string key = "sram." + std::string(name) + ".";
  SramEnergy s;
  s.organization = (instances > 1 ? std::to_string(instances) + " x " : std::string()) + bytes_text(capacity) + ", " +
                   std::to_string(access_bytes) + " B accesses, " + std::string(et::sram_cell_name(cell)) + " cells";
  const auto pick = [&](const char* k, double table_value, double table_scale, double given_scale, double hi) {
    if (auto v = Resolver::value(group, k, hi)) return *v * given_scale;
    r.defaulted(key + k);
    return table_value * table_scale;
  };
  const double n = static_cast<double>(instances);
  s.read_pj_per_byte = pick("read_pj_per_byte", t.read_pj_per_byte, r.sram(table), r.sram(given), 1e6);
  s.write_pj_per_byte = pick("write_pj_per_byte", t.write_pj_per_byte, r.sram(table), r.sram(given), 1e6);
  s.leakage_w = pick("leakage_w", t.leakage_w * n, r.sram_leakage(table), 1.0, 1e6);
  s.area_mm2 = pick("area_mm2", t.area_mm2 * n, et::sram_area_scale(table.node_nm, r.origin(std::nullopt).node_nm), 1.0, 1e6);
  return s;
}

void parse_srams(Resolver& r, const ArchConfig& arch, EnergyConfig& e) {
  const auto group = r.section("sram");
  if (group) group->expect_keys({"cell", "unified_buffer", "accumulators", "weight_fifo"});
  et::SramCell cell = et::SramCell::kHp;
  if (group && group->get("cell")) {
    cell = *et::parse_sram_cell(group->at("cell").as_choice({"hp", "lop", "lstp"}));
  } else {
    r.defaulted("sram.cell");
  }
  // The unified buffer: one array, read a row (read_bytes_per_cycle) at a time.
  e.unified_buffer = sram_buffer(r, group, "unified_buffer", arch.unified_buffer.capacity_bytes,
                                 arch.unified_buffer.read_bytes_per_cycle, 1, cell);
  // The accumulators: assumption, one memory per array column (entries x one 32-bit value),
  // as the paper's 256-wide accumulator datapath (Fig. 1) suggests.
  const int64_t value_bytes = std::max<int64_t>(1, arch.accumulators.width_bits / 8);
  e.accumulators = sram_buffer(r, group, "accumulators",
                               static_cast<uint64_t>(arch.accumulators.entries) * static_cast<uint64_t>(value_bytes),
                               value_bytes, arch.array.cols, cell);
  // The weight FIFO: depth_tiles tiles of rows x cols bytes, one tile row (cols bytes) per access.
  e.weight_fifo = sram_buffer(r, group, "weight_fifo",
                              static_cast<uint64_t>(arch.weight_fifo.depth_tiles) * static_cast<uint64_t>(arch.array.rows) *
                                  static_cast<uint64_t>(arch.array.cols),
                              arch.array.cols, 1, cell);
  const Origin table{et::kSramTableNodeNm, et::kSramTableVdd};
  r.source("sram", "defaults: CACTI 7 runs at 32 nm (energy-serving.md Sec. 1.3), interpolated in log(capacity) and "
                   "log(access width), " + r.rule("SRAM rule (Stillmaker-Baas to 22 nm, sqrt below)", table, r.sram(table)) +
                   "; unified buffer " + e.unified_buffer.organization + "; accumulators " + e.accumulators.organization +
                   "; weight FIFO " + e.weight_fifo.organization);
}

// ---------------------------------------------------------------- DRAM and PCIe
void parse_dram(Resolver& r, const ArchConfig& arch, EnergyConfig& e) {
  const auto group = r.section("dram");
  if (group) group->expect_keys({"read_pj_per_bit", "activation_nj", "row_bytes", "background_w"});
  const et::DramFigures d = et::dram_figures(arch.weight_memory.technology);
  const auto pick = [&](const char* k, double fallback, double hi) {
    if (auto v = Resolver::value(group, k, hi)) return *v;
    r.defaulted(std::string("dram.") + k);
    return fallback;
  };
  e.dram_read_pj_per_bit = pick("read_pj_per_bit", d.read_pj_per_bit, 1e6);
  e.dram_activation_nj = pick("activation_nj", d.activation_nj, 1e6);
  if (group && group->get("row_bytes")) {
    e.dram_row_bytes = group->at("row_bytes").as_int(1, int64_t{1} << 30);
  } else {
    e.dram_row_bytes = d.row_bytes;
    r.defaulted("dram.row_bytes");
  }
  // Background: standby power per bit at the peak rate, times the configured peak rate.
  e.dram_background_w = pick("background_w", d.background_pj_per_bit * 1e-12 * arch.weight_memory.bandwidth_gb_per_s * 8e9, 1e6);
  r.source("dram", "defaults for " + arch.weight_memory.technology + ": " + std::string(d.source) +
                       " (off-chip: not node-scaled)");

  const auto pcie = r.section("pcie");
  if (pcie) pcie->expect_keys({"pj_per_bit"});
  if (auto v = Resolver::value(pcie, "pj_per_bit", 1e6)) {
    e.pcie_pj_per_bit = *v;
    r.source("pcie", "config value");
  } else {
    // UNCONFIRMED: no sourced energy per bit for a PCIe link was found; no default is claimed.
    e.pcie_pj_per_bit = 0;
    r.defaulted("pcie.pj_per_bit");
    r.source("pcie", "not given: PCIe energy counted as 0 (no sourced pJ/bit exists; UNCONFIRMED)");
  }
}

// ---------------------------------------------------------------- static power
// TPU v1's calibration (configs/tpu-v1.yaml, docs/energy.md): its logic leaks 0.10463 W per
// mm^2 of logic area (matrix unit and the rest of the die) at 28 nm and 0.9 V.
constexpr double kTpuLogicLeakageWPerMm2 = 0.10463;
constexpr double kTpuNodeNm = 28;
constexpr double kTpuVdd = 0.9;

void parse_static(Resolver& r, const ArchConfig& arch, EnergyConfig& e, double register_bit_pj) {
  const auto group = r.section("static");
  if (group) group->expect_keys({"leakage_w", "logic_leakage_w_per_mm2", "on_w"});
  std::string src;
  if (auto v = Resolver::value(group, "logic_leakage_w_per_mm2", 1e3)) {
    e.logic_leakage_w_per_mm2 = *v;
  } else {
    // Per device, leakage scales as energy does (Accelergy's hwcomponents tech_node_leak);
    // devices per mm^2 go with the inverse of the area factor.
    e.logic_leakage_w_per_mm2 = kTpuLogicLeakageWPerMm2 *
                                r.logic(Origin{kTpuNodeNm, kTpuVdd}) /
                                et::logic_area_scale(kTpuNodeNm, e.technology_nm);
    r.defaulted("static.logic_leakage_w_per_mm2");
  }
  const AreaBreakdown area = area_breakdown(e, arch.array.rows, arch.array.cols);
  if (auto v = Resolver::value(group, "leakage_w", 1e6)) {
    e.leakage_w = *v;
    src = "leakage: config value";
  } else {
    // The SRAMs' CACTI leakage plus the logic area's.
    e.leakage_w = e.unified_buffer.leakage_w + e.accumulators.leakage_w + e.weight_fifo.leakage_w +
                  e.logic_leakage_w_per_mm2 * area.logic();
    r.defaulted("static.leakage_w");
    src = "leakage: the SRAMs' CACTI leakage + " + num(e.logic_leakage_w_per_mm2) + " W/mm^2 x " + num(area.logic()) +
          " mm^2 of logic (density: " +
          (group && group->get("logic_leakage_w_per_mm2") ? std::string("config value")
                                                          : std::string("TPU v1's calibration, node-scaled")) +
          ")";
  }
  if (auto v = Resolver::value(group, "on_w", 1e6)) {
    e.on_w = *v;
    src += "; on: config value";
  } else {
    // Assumption: every PE pipeline flop is clocked each cycle (no clock gating): stationary
    // operand (double-buffered: twice), streamed operand and 32-bit partial sum, for the
    // widest operand of the array's full-rate modes (slower modes are passes of it), at the
    // register energy per bit.
    int64_t bits = 8;
    for (const MacMode& m : arch.array.mac_modes) {
      if (m.rate >= 1.0) bits = std::max({bits, dtype_bits(m.a), dtype_bits(m.b)});
    }
    const int64_t per_pe = bits * (arch.array.double_buffered ? 2 : 1) + bits + 32;
    e.on_w = static_cast<double>(arch.array.rows) * static_cast<double>(arch.array.cols) * static_cast<double>(per_pe) *
             register_bit_pj * 1e-12 * arch.clock_hz();
    r.defaulted("static.on_w");
    src += "; on: default, " + std::to_string(per_pe) + " clocked flop bits per PE x the register energy per bit x clock";
  }
  r.source("static", src);
}

// ---------------------------------------------------------------- area
void parse_area(Resolver& r, const ArchConfig& arch, EnergyConfig& e) {
  const auto group = r.section("area");
  if (group) group->expect_keys({"node_nm", "mac_um2", "pe_overhead", "sram_overhead", "other_fraction"});
  const auto given = pair_map(group ? group->get("mac_um2") : std::nullopt, 1e9);
  double given_node = e.technology_nm;
  if (group) {
    if (auto n = group->get("node_nm")) given_node = n->as_double(et::kMinNodeNm, et::kMaxNodeNm);
  }
  // The PE is as large as the MAC of its widest full-rate mode; slower modes are passes of it.
  double pe = 0;
  bool defaulted = false;
  for (const MacMode& m : arch.array.mac_modes) {
    if (m.rate < 1.0) continue;
    double a = 0;
    if (auto it = given.find({m.a, m.b}); it != given.end()) {
      a = it->second * et::logic_area_scale(given_node, e.technology_nm);
    } else if (auto v = et::mac_area_um2(mode_key(m.a, m.b))) {
      a = *v * et::logic_area_scale(et::kHorowitzNodeNm, e.technology_nm);
      defaulted = true;
    } else {
      r.root().at("array").at("mac_modes").fail("the " + mode_key(m.a, m.b) +
                                                " mode has no published MAC area to default to: give energy.area.mac_um2." +
                                                mode_key(m.a, m.b));
    }
    pe = std::max(pe, a);
  }
  if (defaulted) r.defaulted("area.mac_um2");
  e.pe_area_um2 = pe;
  const auto pick = [&](const char* k, double fallback, double lo, double hi) {
    if (group) {
      if (auto v = group->get(k)) return v->as_double(lo, hi);
    }
    r.defaulted(std::string("area.") + k);
    return fallback;
  };
  // Calibrated on the TPU v1 floor plan (docs/energy.md): matrix unit ~24% of <= 331 mm^2 over
  // 65,536 Horowitz int8 MACs at 28 nm; unified buffer ~29% over its CACTI data array; 41% of
  // the die outside the matrix unit, unified buffer and accumulators.
  e.pe_overhead = pick("pe_overhead", 7.7, 1.0, 1e3);
  e.sram_overhead = pick("sram_overhead", 2.0, 1.0, 1e3);
  e.other_fraction = pick("other_fraction", 0.41, 0.0, 0.95);
  r.source("area", "MAC: " + std::string(defaulted ? "Horowitz ISSCC 2014 areas (45 nm), Stillmaker-Baas area rule"
                                                   : "config values") +
                       "; SRAM: CACTI 7 data arrays (32 nm), SRAM area rule; overheads: " +
                       std::string(group ? "as given or " : "") + "calibrated on the TPU v1 floor plan");
}

}  // namespace

EnergyConfig parse_energy_config(const YamlNode& root, const ArchConfig& arch) {
  const std::optional<YamlNode> energy = root.get("energy");
  EnergyConfig e;
  Resolver r(root, energy, e);
  if (energy) {
    energy->expect_keys({"technology_nm", "vdd_v", "mac", "register", "vector", "sram", "dram", "pcie", "static",
                         "host_power_w", "area"});
    const YamlNode node = energy->at("technology_nm");
    e.technology_nm = node.as_double(0.1, et::kMaxNodeNm);
    if (e.technology_nm < et::kMinNodeNm) {
      // Issue 33: no published source with per-node energy and area figures below 7 nm was
      // found (Stillmaker & Baas 2017 end at 7 nm), so 5 and 3 nm are refused, not extrapolated.
      node.fail(num(e.technology_nm) + " nm is below the 7 nm that the node scaling tables reach (Stillmaker & Baas, "
                "Integration 58, 2017, tabulate 130-7 nm; Tessera has no sourced figures for 5 or 3 nm and does not "
                "extrapolate). Describe the chip at technology_nm: 7 with its own energy coefficients (docs/energy.md)");
    }
  } else {
    r.defaulted("technology_nm");  // the reference design's 28 nm
  }
  if (energy && energy->get("vdd_v")) {
    e.vdd_v = energy->at("vdd_v").as_double(0.5, 1.5);
  } else {
    r.defaulted("vdd_v");  // Horowitz's 0.9 V
  }
  parse_mac(r, arch, e);
  const double register_bit_pj = parse_register(r, e);
  parse_vector(r, e);
  parse_srams(r, arch, e);
  parse_dram(r, arch, e);
  parse_area(r, arch, e);
  parse_static(r, arch, e, register_bit_pj);
  if (energy && energy->get("host_power_w")) {
    e.host_power_w = energy->at("host_power_w").as_double(0.0, 1e6);
  } else {
    r.defaulted("host_power_w");  // no host given: total perf/W equals incremental
  }
  return e;
}

}  // namespace tessera
