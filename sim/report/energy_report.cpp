#include "sim/report/energy_report.h"

#include <sstream>

#include "sim/report/format.h"

namespace tessera::report {

using nlohmann::ordered_json;
using format::fmt;
using format::safe_div;

namespace {

std::optional<std::pair<Dtype, Dtype>> parse_pair(std::string_view key) {
  const size_t x = key.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  const auto a = parse_dtype(key.substr(0, x)), b = parse_dtype(key.substr(x + 1));
  if (!a || !b) return std::nullopt;
  return std::pair{*a, *b};
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string pair_key(Dtype a, Dtype b) { return std::string(dtype_name(a)) + "x" + std::string(dtype_name(b)); }

}  // namespace

energy::Activity activity_from_counters(const engine::RunStats& stats) {
  energy::Activity a;
  for (const engine::Counter& c : stats.counters) {
    const std::string_view path = c.path;
    const std::string_view name = path.substr(path.rfind('.') + 1);
    const auto u = static_cast<uint64_t>(c.value);
    if (starts_with(name, "idle_macs_")) {
      if (auto p = parse_pair(name.substr(10)); p && c.value > 0) a.add_macs(p->first, p->second, 0, c.value);
    } else if (starts_with(name, "macs_")) {
      if (auto p = parse_pair(name.substr(5)); p && c.value > 0) a.add_macs(p->first, p->second, c.value, 0);
    } else if (name == "register_bits") {
      a.register_bits += c.value;
    } else if (name == "ub_read_bytes") {
      a.ub_read_bytes += u;
    } else if (name == "ub_write_bytes") {
      a.ub_write_bytes += u;
    } else if (name == "accumulator_reads") {
      a.accumulator_reads += c.value;
    } else if (name == "accumulator_writes") {
      a.accumulator_writes += c.value;
    } else if (name == "fifo_bytes") {
      a.weight_fifo_bytes += u;
    } else if (starts_with(name, "ops_")) {
      if (c.value > 0) a.add_vector_ops(name.substr(4), c.value);
    } else if (path == "tessera.weight_memory.bytes_read" || path == "tessera.weight_memory.bytes_written") {
      a.dram_bytes += u;
    } else if (path == "tessera.pcie.bytes_to_device" || path == "tessera.pcie.bytes_to_host") {
      a.pcie_bytes += u;
    }
  }
  return a;
}

std::vector<energy::Activity> layer_activities(const compiler::Program& program, const ArchConfig& arch,
                                               energy::Activity& host_io) {
  std::vector<energy::Activity> out(program.layers.size());
  for (const auto& in : program.instructions) {
    const models::InstructionActivity a = models::activity_of(in, arch.array);
    if (in.layer >= 0 && static_cast<size_t>(in.layer) < out.size()) {
      out[static_cast<size_t>(in.layer)].add(a);
    } else {
      host_io.add(a);
    }
  }
  return out;
}

ordered_json breakdown_json(const energy::Breakdown& b) {
  ordered_json j;
  for (std::string_view c : energy::kComponents) j[std::string(c)] = b[c];
  return j;
}

ordered_json energy_arch_json(const ArchConfig& arch) {
  const EnergyConfig& e = arch.energy;
  ordered_json j;
  j["technology_nm"] = e.technology_nm;
  j["vdd_v"] = e.vdd_v;
  ordered_json mac, idle;
  for (const MacEnergy& m : e.mac) {
    mac[pair_key(m.a, m.b)] = m.pj;
    idle[pair_key(m.a, m.b)] = m.idle_pj;
  }
  j["mac_pj"] = mac;
  j["idle_mac_pj"] = idle;
  j["register_pj_per_bit"] = e.register_pj_per_bit;
  ordered_json vec = ordered_json::object();
  for (const auto& [f, v] : e.vector_pj) vec[f] = v;
  if (e.vector_default_pj) vec["default"] = *e.vector_default_pj;
  j["vector_pj_per_op"] = vec;
  auto sram = [](const SramEnergy& s) {
    return ordered_json{{"organization", s.organization},
                        {"read_pj_per_byte", s.read_pj_per_byte},
                        {"write_pj_per_byte", s.write_pj_per_byte},
                        {"leakage_w", s.leakage_w},
                        {"data_array_mm2", s.area_mm2}};
  };
  j["sram"] = {{"unified_buffer", sram(e.unified_buffer)},
               {"accumulators", sram(e.accumulators)},
               {"weight_fifo", sram(e.weight_fifo)}};
  j["dram"] = {{"read_pj_per_bit", e.dram_read_pj_per_bit},
               {"activation_nj", e.dram_activation_nj},
               {"row_bytes", e.dram_row_bytes},
               {"background_w", e.dram_background_w}};
  j["pcie_pj_per_bit"] = e.pcie_pj_per_bit;
  j["leakage_w"] = e.leakage_w;
  j["on_w"] = e.on_w;
  j["host_power_w"] = e.host_power_w;
  j["area"] = {{"pe_mac_um2", e.pe_area_um2},
               {"pe_overhead", e.pe_overhead},
               {"sram_overhead", e.sram_overhead},
               {"other_fraction", e.other_fraction}};
  j["defaulted"] = e.defaulted;
  ordered_json src;
  for (const auto& [g, t] : e.sources) src[g] = t;
  j["sources"] = src;
  return j;
}

void add_energy_summary(ordered_json& s, const ArchConfig& arch, const energy::Breakdown& run,
                        const energy::Breakdown& host_io, double latency_s, int64_t batch, double tops) {
  const double total = run.total();
  const double power = safe_div(total, latency_s);
  const double ips = safe_div(static_cast<double>(batch), latency_s);
  const energy::PowerModel pm = energy::power_model(arch.energy, run, latency_s);
  const energy::Area area = energy::area_of(arch);
  s["energy_j"] = total;
  s["energy_per_inference_j"] = safe_div(total, static_cast<double>(batch));
  s["inferences_per_j"] = safe_div(static_cast<double>(batch), total);
  s["power_w"] = power;
  s["chip_power_w"] = safe_div(run.chip(), latency_s);
  s["tops_per_w"] = safe_div(tops, power);
  s["energy_breakdown_j"] = breakdown_json(run);
  s["host_io_energy_j"] = host_io.total();
  s["power_vs_load"] = {{"idle_w", pm.idle_w},
                        {"serving_no_work_w", pm.static_w},
                        {"dynamic_w", pm.dynamic_w},
                        {"load_10pct_w", pm.at_load(0.1)},
                        {"busy_w", pm.at_load(1.0)},
                        {"proportionality_10pct", safe_div(pm.at_load(0.1), pm.at_load(1.0))}};
  const double host = arch.energy.host_power_w;
  s["perf_per_w"] = {{"incremental", safe_div(ips, power)},
                     {"total", safe_div(ips, power + host)},
                     {"host_power_w", host}};
  s["area_mm2"] = area.total();
  s["area_breakdown_mm2"] = {{"matrix_unit", area.matrix_unit},
                             {"unified_buffer", area.unified_buffer},
                             {"accumulators", area.accumulators},
                             {"weight_fifo", area.weight_fifo},
                             {"other", area.other}};
}

namespace {
// A config without `energy:` leaves technology_nm, which the section requires, to its default.
bool no_energy_section(const ordered_json& r) {
  if (!r.contains("arch") || !r["arch"].contains("energy")) return false;
  for (const auto& k : r["arch"]["energy"]["defaulted"]) {
    if (k == "energy.technology_nm") return true;
  }
  return false;
}
std::string no_energy_section_text(const ordered_json& r) {
  const auto& e = r["arch"]["energy"];
  return "The config has no energy: section: every energy, power and area figure is a default (" +
         fmt("%g nm", e["technology_nm"].get<double>()) + ", " + fmt("%g V", e["vdd_v"].get<double>()) +
         ", the reference design's coefficients), not this chip's; add an energy: section (docs/energy.md)";
}
}  // namespace

std::string energy_defaults_warning(const ordered_json& r) {
  if (!r.contains("arch") || !r["arch"].contains("energy")) return "";
  const std::string config = r["arch"]["source"].get<std::string>();
  if (no_energy_section(r)) return "warning: " + config + ": " + no_energy_section_text(r) + "\n";
  const auto& d = r["arch"]["energy"]["defaulted"];
  if (d.empty()) return "";
  // The count on stderr; the keys are in the report (a list of 30 names on every run buries the
  // summary).
  return "note: " + config + ": " + std::to_string(d.size()) +
         " energy value(s) took their technology default (listed in report.json arch.energy.defaulted and "
         "summary.md; docs/energy.md)\n";
}

std::string energy_markdown(const ordered_json& r) {
  const auto& s = r["summary"];
  if (!s.contains("energy_j")) return "";
  const double e = s["energy_j"].get<double>();
  const auto& pv = s["power_vs_load"];
  std::ostringstream out;
  out << "\n## Energy and area\n\n| metric | value |\n|---|---|\n";
  out << "| energy per batch | " << format::human_joules(e) << " (" << format::human_joules(s["energy_per_inference_j"].get<double>())
      << " per inference) |\n";
  out << "| average power | " << fmt("%.2f W", s["power_w"].get<double>()) << " (chip "
      << fmt("%.2f W", s["chip_power_w"].get<double>()) << "; the rest is weight memory and PCIe) |\n";
  out << "| TOPS/W | " << fmt("%.3f", s["tops_per_w"].get<double>()) << " |\n";
  out << "| inferences per joule | " << fmt("%.1f", s["inferences_per_j"].get<double>()) << " |\n";
  out << "| power idle / 10% load / busy | " << fmt("%.2f", pv["idle_w"].get<double>()) << " / "
      << fmt("%.2f", pv["load_10pct_w"].get<double>()) << " / " << fmt("%.2f W", pv["busy_w"].get<double>())
      << " (10% load draws " << fmt("%.0f%%", 100 * pv["proportionality_10pct"].get<double>()) << " of busy) |\n";
  if (r.contains("arch") && r["arch"].contains("energy")) {
    out << "| area | " << fmt("%.1f mm^2", s["area_mm2"].get<double>()) << " at "
        << fmt("%g nm", r["arch"]["energy"]["technology_nm"].get<double>()) << " |\n";
  }
  out << "\n| component | energy | share |\n|---|---:|---:|\n";
  for (std::string_view c : energy::kComponents) {
    const double v = s["energy_breakdown_j"][std::string(c)].get<double>();
    out << "| " << c << " | " << format::human_joules(v) << " | " << fmt("%.1f%%", 100 * safe_div(v, e)) << " |\n";
  }
  out << "| total | " << format::human_joules(e) << " | 100.0% |\n";
  const auto& ab = s["area_breakdown_mm2"];
  const double at = s["area_mm2"].get<double>();
  out << "\n| block | area | share |\n|---|---:|---:|\n";
  for (const auto& [k, v] : ab.items()) {
    out << "| " << k << " | " << fmt("%.2f mm^2", v.get<double>()) << " | " << fmt("%.1f%%", 100 * safe_div(v.get<double>(), at))
        << " |\n";
  }
  if (r.contains("arch") && r["arch"].contains("energy")) {
    const auto& d = r["arch"]["energy"]["defaulted"];
    if (no_energy_section(r)) out << "\n**" << no_energy_section_text(r) << "**\n";
    out << "\n" << d.size() << " energy value(s) took their technology default (report.json: arch.energy.defaulted";
    out << "; docs/energy.md gives every source).\n";
  }
  return out.str();
}

std::string energy_console(const ordered_json& r) {
  const auto& s = r["summary"];
  if (!s.contains("energy_j")) return "";
  const double e = s["energy_j"].get<double>();
  std::ostringstream out;
  out << "  energy: " << format::human_joules(e) << " per batch (" << format::human_joules(s["energy_per_inference_j"].get<double>())
      << " per inference), " << fmt("%.2f W", s["power_w"].get<double>()) << ", "
      << fmt("%.3f TOPS/W", s["tops_per_w"].get<double>()) << ", area " << fmt("%.1f mm^2", s["area_mm2"].get<double>())
      << "\n   ";
  for (std::string_view c : energy::kComponents) {
    out << " " << c << " " << fmt("%.1f%%", 100 * safe_div(s["energy_breakdown_j"][std::string(c)].get<double>(), e));
  }
  out << "\n";
  return out.str();
}

}  // namespace tessera::report
