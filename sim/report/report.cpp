#include "sim/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "sim/common/atomic_file.h"
#include "sim/common/error.h"
#include "sim/common/output_dir.h"
#include "sim/report/baselines.h"
#include "sim/report/energy_report.h"
#include "sim/report/format.h"
#include "sim/report/layer_columns.h"
#include "sim/report/tpu_paper_view.h"

namespace tessera::report {

using nlohmann::ordered_json;

double Roofline::attainable_tops(double ops_per_byte) const {
  return std::min(peak_tops, bandwidth_gb_per_s * 1e9 * ops_per_byte / 1e12);
}

namespace {

// The buckets in report order (engine::kCycleCauses), then their total.
ordered_json cycles_json(const engine::CycleBreakdown& c) {
  ordered_json j;
  for (size_t b = 0; b < engine::kBucketCount; ++b) {
    if (std::string_view(engine::kBuckets[b].part_of).empty()) j[engine::kBuckets[b].name] = c.by_bucket[b];
  }
  j["total"] = c.total();
  return j;
}

using format::fmt;
using format::human_seconds;
using format::safe_div;

}  // namespace

bool summary_key_reads_cycle_breakdown(std::string_view key) {
  // The summary's keys from the counters, the program and the latency (build_report below);
  // not: cycles, host_io_cycles, cycles_split, host_io_energy_j.
  static constexpr std::string_view kWithout[] = {
      "latency_s", "latency_cycles", "inferences_per_s", "macs", "array_macs", "ops", "tops", "peak_tops",
      "utilization", "oi_macs_per_weight_byte", "oi_ops_per_weight_byte", "oi_ops_per_dram_byte",
      "weight_memory_bytes", "device_memory_bytes_written", "pcie_bytes_to_device", "pcie_bytes_to_host",
      "unified_buffer_peak_bytes", "spill_bytes", "spill_bytes_out", "spill_bytes_in", "instructions",
      "busy_cycles", "energy_j", "energy_per_inference_j", "inferences_per_j", "power_w", "chip_power_w",
      "tops_per_w", "energy_breakdown_j", "power_vs_load", "perf_per_w", "area_mm2", "area_breakdown_mm2"};
  return std::find(std::begin(kWithout), std::end(kWithout), key) == std::end(kWithout);
}

namespace {

// The run's own figures that several sections of the report share.
struct RunFigures {
  double clock_hz = 0;
  double latency_s = 0;
  double peak_int8 = 0;     // the array's int8 x int8 peak
  double peak_rate1 = 0;    // the peak at one MAC per PE per cycle; a mode's peak is this times its rate
  double peak_tops = 0;     // the peak at the precisions the matrix work ran at
  int64_t macs = 0;         // every layer's, also those the vector unit runs
  double ops = 0;
  double tops = 0;
  double oi_macs_w = 0;     // MACs per weight byte
  double oi_ops_dram = 0;   // ops per off-chip byte: weights, device writes, PCIe
  double pcie_gb_per_s = 0; // 0: no host link
};

RunFigures run_figures(const RunRecord& run) {
  const ArchConfig& arch = run.arch;
  const engine::RunStats& st = run.stats;
  const compiler::Program& prog = run.program;
  RunFigures f;
  f.clock_hz = arch.clock_hz();
  f.latency_s = st.total_seconds();

  // Peak at the precision the matrix work actually ran at: MAC-weighted mean rate.
  double weighted_rate = 0;
  int64_t matrix_macs = 0;
  for (const auto& l : prog.layers) {
    if (l.macs == 0) continue;
    const MacMode* m = arch.array.find_mode(l.a_dtype, l.b_dtype);
    weighted_rate += static_cast<double>(l.macs) / (m ? m->rate : 1.0);
    matrix_macs += l.macs;
  }
  f.peak_int8 = arch.peak_tops();
  // The peak at rate 1.0 (one MAC per PE per cycle); a mode's peak is this times its rate.
  // peak_int8 already includes the int8 x int8 rate, which must not be applied twice.
  f.peak_rate1 = f.peak_int8 / arch.array.find_mode(Dtype::kInt8, Dtype::kInt8)->rate;
  f.peak_tops = matrix_macs > 0 ? f.peak_rate1 * static_cast<double>(matrix_macs) / weighted_rate : f.peak_int8;

  // Every layer's MACs, also those the vector unit runs (a depthwise conv mapped there);
  // st.macs counts only the array's.
  for (const auto& l : prog.layers) f.macs += l.macs;
  f.ops = 2.0 * static_cast<double>(f.macs);
  f.tops = safe_div(f.ops, f.latency_s) / 1e12;
  const double weight_bytes = static_cast<double>(st.weight_memory_bytes);
  const double pcie_bytes = static_cast<double>(st.pcie_bytes_to_device + st.pcie_bytes_to_host);
  f.oi_macs_w = safe_div(static_cast<double>(f.macs), weight_bytes);
  f.oi_ops_dram = safe_div(f.ops, weight_bytes + static_cast<double>(st.device_memory_bytes_written) + pcie_bytes);
  f.pcie_gb_per_s = arch.has_host_link ? arch.pcie.link_bytes_per_s() / 1e9 : 0.0;
  return f;
}

// report.json "arch": the config the run simulated.
ordered_json arch_json(const ArchConfig& arch, const RunFigures& f) {
  ordered_json a;
  a["name"] = arch.name;
  a["source"] = arch.source;
  a["clock_mhz"] = arch.clock_mhz;
  a["array"] = {{"rows", arch.array.rows}, {"cols", arch.array.cols},
                {"dataflow", std::string(array::dataflow_name(arch.array.dataflow))},
                {"double_buffered", arch.array.double_buffered}};
  a["peak_tops_int8"] = f.peak_int8;
  a["unified_buffer_bytes"] = arch.unified_buffer.capacity_bytes;
  a["accumulator_entries"] = arch.accumulators.entries;
  a["weight_fifo_depth_tiles"] = arch.weight_fifo.depth_tiles;
  a["weight_memory"] = {{"technology", arch.weight_memory.technology},
                        {"bandwidth_gb_per_s", arch.weight_memory.bandwidth_gb_per_s},
                        {"latency_ns", arch.weight_memory.latency_ns},
                        {"channels", arch.weight_memory.channels},
                        {"fetch", arch.weight_memory.fetch == WeightFetch::kTile ? "tile" : "exact"}};
  if (arch.has_host_link) {
    a["pcie"] = {{"generation", arch.pcie.generation}, {"lanes", arch.pcie.lanes},
                 {"link_gb_per_s", f.pcie_gb_per_s}, {"max_payload_bytes", arch.pcie.max_payload_bytes},
                 {"tlp_overhead_bytes", arch.pcie.tlp_overhead_bytes}, {"latency_ns", arch.pcie.latency_ns}};
  } else {
    a["pcie"] = nullptr;  // no host link
  }
  // The chip template beyond TPU v1's shape (docs/configs.md): only for configs that use it,
  // so TPU v1's reports stay as they were.
  if (arch.chip_template) {
    a["chip"] = {{"cores", arch.cores},
                 {"megacore", arch.megacore},
                 {"active_cores", arch.active_cores()},
                 {"matrix_units_per_core", arch.array.count},
                 {"host_link", arch.has_host_link},
                 {"residency", {{"inputs", std::string(residency_name(arch.residency.inputs))},
                                {"weights", std::string(residency_name(arch.residency.weights))},
                                {"outputs", std::string(residency_name(arch.residency.outputs))}}},
                 {"dma_engines_per_core", arch.dma.engines},
                 {"dma_latency_ns", arch.dma.latency_ns},
                 {"launch_overhead_ns", arch.controller.launch_overhead_ns},
                 {"vector_bytes_per_cycle", arch.vector_unit.bytes_per_cycle()},
                 {"vector_packs_narrow_types", arch.vector_unit.packs_narrow_types}};
    ordered_json& rates = a["chip"]["vector_cycles_per_op"];
    for (VectorClass c : kAllVectorClasses) {
      rates[std::string(vector_class_name(c))] = arch.vector_unit.cycles_per_op[static_cast<size_t>(c)];
    }
  }
  a["energy"] = energy_arch_json(arch);
  a["ideal_memory"] = arch.ideal_memory;
  return a;
}

// A quantized model's own int8/uint8 codes set these layers' precision (docs/precision.md):
// how many matrix layers, at which modes; null when none.
ordered_json quantized_by_model_json(const RunRecord& run) {
  const compiler::Program& prog = run.program;
  const auto quantized = graph::model_quantization(run.graph);
  int64_t count = 0;
  std::vector<std::string> modes;
  for (size_t i = 0; i < run.graph.layers.size() && i < prog.layers.size(); ++i) {
    const graph::Layer& l = run.graph.layers[i];
    if (!graph::is_matrix_op(l.op)) continue;
    if (!quantized[static_cast<size_t>(l.inputs.at(0))] && !l.quantized_weights) continue;
    ++count;
    const std::string mode = std::string(dtype_name(prog.layers[i].a_dtype)) + "x" + std::string(dtype_name(prog.layers[i].b_dtype));
    if (std::find(modes.begin(), modes.end(), mode) == modes.end()) modes.push_back(mode);
  }
  if (count == 0) return nullptr;
  return {{"matrix_layers", count}, {"modes", modes}};
}

// Work the model leaves to the host (NonMaxSuppression, ...): what it reads crosses PCIe
// as graph outputs (in host_output_bytes); its own CPU time is the host's, not simulated.
ordered_json host_ops_json(const RunRecord& run) {
  ordered_json ops = ordered_json::array();
  for (const auto& h : run.graph.host_ops) {
    std::vector<std::string> reads;
    int64_t bytes = 0;
    for (int t : h.reads) {
      const graph::Tensor& tensor = run.graph.tensors[static_cast<size_t>(t)];
      reads.push_back(tensor.name);
      bytes += elements_bytes(tensor.dtype, graph::shape_elements(tensor.shape));
    }
    ops.push_back({{"node", h.name}, {"op", h.op}, {"reads", reads}, {"bytes_to_host", bytes * run.program.batch}});
  }
  return ops;
}

// report.json "workload": the graph as compiled, its size and its host traffic.
ordered_json workload_json(const RunRecord& run, const RunFigures& f) {
  const compiler::Program& prog = run.program;
  ordered_json w;
  w["name"] = run.graph.name;
  w["source"] = run.graph.source;
  w["description"] = run.graph.description;
  w["batch"] = prog.batch;
  w["sub_batch"] = prog.sub_batch;
  w["precision"] = run.precision;
  w["layers"] = prog.layers.size();
  w["weights"] = run.graph.total_weights();
  w["macs"] = f.macs;
  w["macs_per_weight"] = safe_div(static_cast<double>(f.macs), static_cast<double>(run.graph.total_weights()));
  if (ordered_json q = quantized_by_model_json(run); !q.is_null()) w["quantized_by_model"] = std::move(q);
  if (!run.graph.host_ops.empty()) w["host_ops"] = host_ops_json(run);
  w["host_input_bytes"] = prog.host_input_bytes;
  w["host_output_bytes"] = prog.host_output_bytes;
  if (run.arch.chip_template) {
    w["device_input_bytes"] = prog.device_input_bytes;
    w["device_output_bytes"] = prog.device_output_bytes;
  }
  // Weights in host memory: the part of pcie_bytes_to_device the weight fetchers read.
  if (run.arch.residency.weights == Residency::kHost) w["host_weight_bytes"] = prog.host_weight_bytes;
  return w;
}

// report.json "summary": the run's metrics (DESIGN.md §6), its cycle breakdown and energy.
// Without the breakdown (a run simulated without it) only the keys that do not read it.
ordered_json summary_json(const RunRecord& run, const RunFigures& f, const energy::Activity& host_activity,
                          bool cycle_breakdown) {
  const ArchConfig& arch = run.arch;
  const engine::RunStats& st = run.stats;
  const compiler::Program& prog = run.program;
  ordered_json s;
  s["latency_s"] = f.latency_s;
  s["latency_cycles"] = st.total_cycles;
  s["inferences_per_s"] = safe_div(static_cast<double>(prog.batch), f.latency_s);
  s["macs"] = f.macs;
  s["array_macs"] = st.macs;
  s["ops"] = f.ops;
  s["tops"] = f.tops;
  s["peak_tops"] = f.peak_tops;
  s["utilization"] = safe_div(f.tops, f.peak_tops);
  s["oi_macs_per_weight_byte"] = f.oi_macs_w;
  s["oi_ops_per_weight_byte"] = 2 * f.oi_macs_w;
  s["oi_ops_per_dram_byte"] = f.oi_ops_dram;
  s["weight_memory_bytes"] = st.weight_memory_bytes;
  if (arch.chip_template) s["device_memory_bytes_written"] = st.device_memory_bytes_written;
  s["pcie_bytes_to_device"] = st.pcie_bytes_to_device;
  s["pcie_bytes_to_host"] = st.pcie_bytes_to_host;
  s["unified_buffer_peak_bytes"] = prog.ub_peak_bytes;
  // Activations evicted to host memory and read back (or streamed by row-tiled layers) over PCIe.
  s["spill_bytes"] = prog.spill_bytes_out + prog.spill_bytes_in;
  s["spill_bytes_out"] = prog.spill_bytes_out;
  s["spill_bytes_in"] = prog.spill_bytes_in;
  s["instructions"] = st.instructions;
  s["cycles"] = cycles_json(st.cycles);
  s["host_io_cycles"] = cycles_json(st.host_io);
  // Parts of two causes, for the TPU paper's Table 3 (`table3` below): array_active =
  // array_stream + array_drain, pcie = pcie_input + pcie_output.
  s["cycles_split"] = {{"array_stream", st.cycles.array_stream()},
                       {"array_drain", st.cycles["array_drain"]},
                       {"pcie_input", st.cycles["pcie_input"]},
                       {"pcie_output", st.cycles.pcie_output()}};
  s["busy_cycles"] = {{"array", st.array_busy_cycles}, {"array_stream", st.array_stream_cycles}, {"weight_memory", st.weight_memory_busy_cycles},
                      {"pcie", st.pcie_busy_cycles}, {"vector_unit", st.vector_busy_cycles}};
  const energy::Breakdown run_energy = energy::energy_of(arch, activity_from_counters(st), f.latency_s);
  const energy::Breakdown host_energy =
      energy::energy_of(arch, host_activity, static_cast<double>(st.host_io.total()) / f.clock_hz);
  add_energy_summary(s, arch, run_energy, host_energy, f.latency_s, prog.batch, f.tops);
  if (cycle_breakdown) return s;
  // The run was simulated without the breakdown: what reads it would be zeros.
  ordered_json kept = ordered_json::object();
  for (auto& [key, value] : s.items()) {
    if (!summary_key_reads_cycle_breakdown(key)) kept[key] = std::move(value);
  }
  return kept;
}

// Per layer: its row of report.json "layers" and (matrix layers) its point of the roofline.
struct LayerSections {
  ordered_json layers = ordered_json::array();
  ordered_json roofline = ordered_json::array();
};

LayerSections layer_sections(const RunRecord& run, const RunFigures& f, const std::vector<energy::Activity>& layer_activity,
                             const ReportParts& parts) {
  const ArchConfig& arch = run.arch;
  const compiler::Program& prog = run.program;
  LayerSections out;
  for (size_t i = 0; (parts.layers || parts.roofline) && i < prog.layers.size(); ++i) {
    const compiler::LayerInfo& li = prog.layers[i];
    const engine::LayerStats& ls = run.stats.layers[i];
    const int64_t attributed = ls.cycles.total();
    const double lat = static_cast<double>(attributed) / f.clock_hz;
    const double lops = 2.0 * static_cast<double>(li.macs);
    const MacMode* mode = arch.array.find_mode(li.a_dtype, li.b_dtype);
    const double lpeak = li.macs > 0 ? f.peak_rate1 * (mode ? mode->rate : 1.0) : 0.0;
    const double ltops = safe_div(lops, lat) / 1e12;
    const double l_oi = safe_div(static_cast<double>(li.macs), static_cast<double>(li.weight_bytes));
    // Off-chip bytes a layer moves itself: weights plus its spills over PCIe (the batch's host
    // input/output transfers belong to no layer and count only in the workload point).
    const double l_oi_dram =
        safe_div(lops, static_cast<double>(li.weight_bytes + li.spill_bytes_out + li.spill_bytes_in));
    if (parts.layers) {
      out.layers.push_back(layer_json({.index = i, .info = li, .stats = ls, .clock_hz = f.clock_hz, .latency_cycles = attributed,
                                       .latency_s = lat, .ops = lops, .peak_tops = lpeak, .tops = ltops,
                                       .oi_macs_per_weight_byte = l_oi, .oi_ops_per_dram_byte = l_oi_dram,
                                       .energy = energy::energy_of(arch, layer_activity[i], lat)}));
    }
    if (parts.roofline && li.macs > 0) {
      const Roofline lroof{lpeak, arch.weight_memory.bandwidth_gb_per_s};
      const Roofline lroof_dram{lpeak, arch.weight_memory.bandwidth_gb_per_s + f.pcie_gb_per_s};
      out.roofline.push_back({{"name", li.name},
                              {"mode", std::string(dtype_name(li.a_dtype)) + "x" + std::string(dtype_name(li.b_dtype))},
                              {"peak_tops", lpeak},
                              {"oi_ops_per_weight_byte", 2 * l_oi},
                              {"oi_macs_per_weight_byte", l_oi},
                              {"attainable_tops", lroof.attainable_tops(2 * l_oi)},
                              {"oi_ops_per_dram_byte", l_oi_dram},
                              {"attainable_tops_dram", lroof_dram.attainable_tops(l_oi_dram)},
                              {"achieved_tops", ltops},
                              {"bound", 2 * l_oi < lroof.ridge_ops_per_byte() ? "memory" : "compute"}});
    }
  }
  return out;
}

// report.json "roofline": the workload against the weight-memory and the DRAM roof, one roof
// per MAC mode, and the matrix layers' points.
ordered_json roofline_json(const ArchConfig& arch, const RunFigures& f, ordered_json layer_points) {
  const Roofline weight_roof{f.peak_tops, arch.weight_memory.bandwidth_gb_per_s};
  const Roofline dram_roof{f.peak_tops, arch.weight_memory.bandwidth_gb_per_s + f.pcie_gb_per_s};
  ordered_json roof;
  roof["peak_tops"] = f.peak_tops;
  roof["weight_memory"] = {{"bandwidth_gb_per_s", weight_roof.bandwidth_gb_per_s},
                           {"ridge_ops_per_byte", weight_roof.ridge_ops_per_byte()},
                           {"ridge_macs_per_byte", weight_roof.ridge_ops_per_byte() / 2},
                           {"oi_ops_per_byte", 2 * f.oi_macs_w},
                           {"attainable_tops", weight_roof.attainable_tops(2 * f.oi_macs_w)},
                           {"achieved_tops", f.tops},
                           {"bound", 2 * f.oi_macs_w < weight_roof.ridge_ops_per_byte() ? "memory" : "compute"}};
  roof["dram"] = {{"bandwidth_gb_per_s", dram_roof.bandwidth_gb_per_s},
                  {"ridge_ops_per_byte", dram_roof.ridge_ops_per_byte()},
                  {"oi_ops_per_byte", f.oi_ops_dram},
                  {"attainable_tops", dram_roof.attainable_tops(f.oi_ops_dram)},
                  {"achieved_tops", f.tops}};
  // One roof per MAC mode the array has: the peak and ridge points a layer at that
  // precision runs against, in both operational-intensity flavours (DESIGN.md section 6).
  ordered_json by_precision = ordered_json::array();
  for (const MacMode& m : arch.array.mac_modes) {
    const double mpeak = f.peak_rate1 * m.rate;
    const Roofline mw{mpeak, arch.weight_memory.bandwidth_gb_per_s};
    const Roofline md{mpeak, arch.weight_memory.bandwidth_gb_per_s + f.pcie_gb_per_s};
    by_precision.push_back({{"mode", std::string(dtype_name(m.a)) + "x" + std::string(dtype_name(m.b))},
                            {"a_dtype", std::string(dtype_name(m.a))},
                            {"b_dtype", std::string(dtype_name(m.b))},
                            {"mac_rate", m.rate},
                            {"peak_tops", mpeak},
                            {"ridge_ops_per_weight_byte", mw.ridge_ops_per_byte()},
                            {"ridge_macs_per_weight_byte", mw.ridge_ops_per_byte() / 2},
                            {"ridge_ops_per_dram_byte", md.ridge_ops_per_byte()}});
  }
  roof["by_precision"] = by_precision;
  roof["layers"] = std::move(layer_points);
  return roof;
}

}  // namespace

ordered_json build_report(const RunRecord& run, const ReportParts& parts) {
  const RunFigures f = run_figures(run);
  ordered_json r;
  r["tessera_report_version"] = 1;
  if (parts.arch) r["arch"] = arch_json(run.arch, f);
  if (parts.workload) r["workload"] = workload_json(run, f);

  // Energy (docs/energy.md): the run's from the units' counters; each layer's from its
  // instructions plus the static power over its attributed latency; the instructions of no
  // layer (the batch's host transfers) with the host_io cycles.
  energy::Activity host_activity;
  std::vector<energy::Activity> layer_activity;
  // Without the breakdown, host_activity feeds only host_io_energy_j, a key left out.
  if ((parts.summary && parts.cycle_breakdown) || parts.layers) {
    layer_activity = layer_activities(run.program, run.arch, host_activity);
  }
  if (parts.summary) r["summary"] = summary_json(run, f, host_activity, parts.cycle_breakdown);

  LayerSections per_layer = layer_sections(run, f, layer_activity, parts);
  if (parts.layers) r["layers"] = std::move(per_layer.layers);
  if (parts.roofline) r["roofline"] = roofline_json(run.arch, f, std::move(per_layer.roofline));
  if (parts.table3) r["table3"] = tpu_paper_view_json(run.arch, run.stats, f.tops, f.peak_tops);
  r["baselines"] = ordered_json::array();
  return r;
}

namespace {

// "mlp0 on tpu-v1": what the summaries are about.
std::string run_title(const ordered_json& r) {
  return r["workload"]["name"].get<std::string>() + " on " + r["arch"]["name"].get<std::string>();
}

// A cause's share of the cycles: "12.3%".
std::string cycle_share(const ordered_json& cycles, const char* cause) {
  return fmt("%.1f%%", 100 * safe_div(cycles[cause].get<double>(), cycles["total"].get<double>()));
}

// The roof of every MAC mode, then the workload's point on both flavours.
std::string roofline_markdown(const ordered_json& r) {
  const auto& roof = r["roofline"];
  if (!roof.contains("by_precision")) return "";
  std::ostringstream out;
  out << "\n## Roofline\n\n| MAC mode | peak TOPS | ridge (ops/weight byte) | ridge (MACs/weight byte) | "
         "ridge (ops/DRAM byte) |\n|---|---:|---:|---:|---:|\n";
  for (const auto& m : roof["by_precision"]) {
    out << "| " << m["mode"].get<std::string>() << " | " << fmt("%.2f", m["peak_tops"].get<double>()) << " | "
        << fmt("%.1f", m["ridge_ops_per_weight_byte"].get<double>()) << " | "
        << fmt("%.1f", m["ridge_macs_per_weight_byte"].get<double>()) << " | "
        << fmt("%.1f", m["ridge_ops_per_dram_byte"].get<double>()) << " |\n";
  }
  const auto& w = roof["weight_memory"];
  const auto& d = roof["dram"];
  out << "\nWorkload: " << fmt("%.1f", w["oi_ops_per_byte"].get<double>()) << " ops per weight byte (ceiling "
      << fmt("%.2f", w["attainable_tops"].get<double>()) << " TOPS), " << fmt("%.1f", d["oi_ops_per_byte"].get<double>())
      << " ops per DRAM byte (ceiling " << fmt("%.2f", d["attainable_tops"].get<double>()) << " TOPS); achieved "
      << fmt("%.2f", w["achieved_tops"].get<double>()) << " TOPS.\n";
  return out.str();
}

}  // namespace

std::string layers_csv(const ordered_json& report) {
  std::string out = layers_csv_header() + "\n";
  for (const auto& l : report["layers"]) out += layer_csv_row(l) + "\n";
  return out;
}

namespace {
// The precision line: the policy (and where it came from), and the layers a quantized model's
// own codes set, which every policy keeps.
std::string precision_text(const ordered_json& r, const std::string& label) {
  std::string text = label.empty() ? r["workload"]["precision"].get<std::string>() : label;
  if (r["workload"].contains("quantized_by_model")) {
    const auto& q = r["workload"]["quantized_by_model"];
    std::string modes;
    for (const auto& m : q["modes"]) modes += (modes.empty() ? "" : ", ") + m.get<std::string>();
    text += "; " + std::to_string(q["matrix_layers"].get<int64_t>()) + " matrix layer(s) at the model's own quantized types (" +
            modes + ")";
  }
  return text;
}
}  // namespace

std::string summary_markdown(const ordered_json& r, const std::string& precision_label) {
  const auto& s = r["summary"];
  const auto& c = s["cycles"];
  std::ostringstream out;
  out << "# " << run_title(r) << "\n\n";
  out << "| metric | value |\n|---|---|\n";
  out << "| batch | " << r["workload"]["batch"].get<int64_t>() << " |\n";
  out << "| precision | " << precision_text(r, precision_label) << " |\n";
  out << "| latency | " << human_seconds(s["latency_s"].get<double>()) << " (" << s["latency_cycles"].get<int64_t>()
      << " cycles) |\n";
  out << "| throughput | " << fmt("%.1f", s["inferences_per_s"].get<double>()) << " inferences/s |\n";
  out << "| TOPS | " << fmt("%.2f", s["tops"].get<double>()) << " of " << fmt("%.2f", s["peak_tops"].get<double>())
      << " peak (" << fmt("%.1f", 100 * s["utilization"].get<double>()) << "% utilization) |\n";
  out << "| MACs per weight byte | " << fmt("%.1f", s["oi_macs_per_weight_byte"].get<double>()) << " (ridge "
      << fmt("%.1f", r["roofline"]["weight_memory"]["ridge_macs_per_byte"].get<double>()) << ", "
      << r["roofline"]["weight_memory"]["bound"].get<std::string>() << "-bound) |\n";
  out << "| roofline ceiling | " << fmt("%.2f", r["roofline"]["weight_memory"]["attainable_tops"].get<double>())
      << " TOPS |\n\n";
  out << "## Cycle breakdown\n\n| cause | cycles | share |\n|---|---:|---:|\n";
  for (const char* b : kCycleCauses) out << "| " << b << " | " << c[b].get<int64_t>() << " | " << cycle_share(c, b) << " |\n";
  out << "| total | " << c["total"].get<int64_t>() << " | 100.0% |\n";
  out << tpu_paper_view_markdown(r) << "\n";
  out << "## Layers\n\n" << layers_markdown_header();
  for (const auto& l : r["layers"]) out << layer_markdown_row(l);
  if (s.value("spill_bytes", uint64_t{0}) > 0) {
    // Only when something did not fit, so reports of workloads that fit read as before.
    out << "\n## Spills to host memory\n\n" << s["spill_bytes_out"].get<uint64_t>() << " bytes written to and "
        << s["spill_bytes_in"].get<uint64_t>() << " bytes read back from host memory over PCIe (their time is in the "
        << "pcie cause).\n\n| # | layer | spilled out | read back | row tiles |\n|---:|---|---:|---:|---:|\n";
    for (const auto& l : r["layers"]) {
      if (l.value("spill_bytes_out", uint64_t{0}) + l.value("spill_bytes_in", uint64_t{0}) == 0) continue;
      out << "| " << l["index"].get<int64_t>() << " | " << l["name"].get<std::string>() << " | "
          << l["spill_bytes_out"].get<uint64_t>() << " | " << l["spill_bytes_in"].get<uint64_t>() << " | "
          << l["row_tiles"].get<int64_t>() << " |\n";
    }
  }
  out << roofline_markdown(r);
  out << energy_markdown(r);
  out << baselines_markdown(r);
  return out.str();
}

std::string console_summary(const ordered_json& r, const std::string& precision_label) {
  const auto& s = r["summary"];
  std::ostringstream out;
  out << run_title(r) << ", batch "
      << r["workload"]["batch"].get<int64_t>() << ": latency " << human_seconds(s["latency_s"].get<double>()) << ", "
      << fmt("%.1f", s["inferences_per_s"].get<double>()) << " inferences/s, " << fmt("%.2f", s["tops"].get<double>())
      << " TOPS (" << fmt("%.1f", 100 * s["utilization"].get<double>()) << "% of "
      << fmt("%.2f", s["peak_tops"].get<double>()) << "), roofline ceiling "
      << fmt("%.2f", r["roofline"]["weight_memory"]["attainable_tops"].get<double>()) << " TOPS\n  cycles:";
  for (const char* b : kCycleCauses) out << " " << b << " " << cycle_share(s["cycles"], b);
  out << "\n  precision: " << precision_text(r, precision_label) << "\n" << energy_console(r);
  return out.str();
}

std::vector<OutputFile> report_files(const std::filesystem::path& dir, const ordered_json& report,
                                     const std::string& precision_label) {
  prepare_output_directory(dir, "");  // the one routine of every command (sim/common/output_dir.h)
  std::vector<OutputFile> files = report_file_targets(dir);
  // Render everything before writing anything, so a failure leaves no partial set.
  files[0].contents = report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  files[1].contents = layers_csv(report);
  files[2].contents = summary_markdown(report, precision_label);
  return files;
}

std::vector<OutputFile> report_file_targets(const std::filesystem::path& dir) {
  return {{dir / "report.json", "", false, "--out (report.json)"},
          {dir / "layers.csv", "", false, "--out (layers.csv)"},
          {dir / "summary.md", "", false, "--out (summary.md)"}};
}

void write_report_files(const std::filesystem::path& dir, const ordered_json& report) {
  write_files_atomically(report_files(dir, report));
}

}  // namespace tessera::report
