#include "sim/report/baselines.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "sim/common/data_path.h"
#include "sim/common/error.h"
#include "sim/common/text_file.h"
#include "sim/report/format.h"

namespace tessera::report {

using nlohmann::ordered_json;
namespace bl = tessera::baseline;

namespace {

using format::fmt;
using format::human_seconds;
using format::safe_div;

// 16.8x, 9.2x; two decimals below 1 so that a faster baseline does not read as 0.1x or 0.0x.
std::string speedup_text(double x) { return fmt(x < 1 ? "%.2fx" : "%.1fx", x); }

// "98 W (measured)", "700 W (TDP)" or "-".
std::string power_text(const ordered_json& b) {
  if (!b.contains("power") || !b["power"].is_object()) return "-";
  const auto& p = b["power"];
  return fmt("%.0f W", p["busy_w"].get<double>()) + (p["basis"] == "tdp" ? " (TDP)" : " (measured)");
}

// The accelerator's perf/W over the baseline's: "29.1x / 14.2x" or "-".
std::string perf_per_w_text(const ordered_json& b) {
  if (!b.contains("accelerator_perf_per_w_ratio") || !b["accelerator_perf_per_w_ratio"].is_object()) return "-";
  const auto& r = b["accelerator_perf_per_w_ratio"];
  return speedup_text(r["incremental"].get<double>()) + " / " + speedup_text(r["total"].get<double>());
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Accelerator latency of the whole run and of layer i, or 0 when the report lacks them.
double acc_latency(const ordered_json& acc) {
  if (acc.contains("summary") && acc["summary"].contains("latency_s") && acc["summary"]["latency_s"].is_number()) {
    return acc["summary"]["latency_s"].get<double>();
  }
  return 0.0;
}
double acc_layer_latency(const ordered_json& acc, size_t i) {
  if (!acc.contains("layers") || !acc["layers"].is_array() || i >= acc["layers"].size()) return 0.0;
  const auto& l = acc["layers"][i];
  return l.contains("latency_s") && l["latency_s"].is_number() ? l["latency_s"].get<double>() : 0.0;
}

ordered_json speedup(double baseline_s, double accelerator_s) {
  if (baseline_s > 0 && accelerator_s > 0) return baseline_s / accelerator_s;
  return nullptr;
}

// The report's roofline shape (weight_memory and dram flavours, per-layer points) for one platform.
ordered_json roofline_json(double peak_tops, double bandwidth_gb_per_s, double macs, double weight_bytes,
                           double dram_bytes, double achieved_tops, const ordered_json& layer_points) {
  const Roofline roof{peak_tops, bandwidth_gb_per_s};
  const double oi_w = safe_div(2 * macs, weight_bytes);
  const double oi_d = safe_div(2 * macs, dram_bytes);
  ordered_json r;
  r["peak_tops"] = peak_tops;
  r["weight_memory"] = {{"bandwidth_gb_per_s", bandwidth_gb_per_s},
                        {"ridge_ops_per_byte", roof.ridge_ops_per_byte()},
                        {"ridge_macs_per_byte", roof.ridge_ops_per_byte() / 2},
                        {"oi_ops_per_byte", oi_w},
                        {"oi_macs_per_byte", oi_w / 2},
                        {"attainable_tops", roof.attainable_tops(oi_w)},
                        {"achieved_tops", achieved_tops},
                        {"bound", oi_w < roof.ridge_ops_per_byte() ? "memory" : "compute"}};
  r["dram"] = {{"bandwidth_gb_per_s", bandwidth_gb_per_s},
               {"ridge_ops_per_byte", roof.ridge_ops_per_byte()},
               {"oi_ops_per_byte", oi_d},
               {"attainable_tops", roof.attainable_tops(oi_d)},
               {"achieved_tops", achieved_tops},
               {"bound", oi_d < roof.ridge_ops_per_byte() ? "memory" : "compute"}};
  r["layers"] = layer_points;
  return r;
}

ordered_json layer_head(size_t i, const bl::LayerWork& l) {
  ordered_json j;
  j["index"] = i;
  j["name"] = l.name;
  j["op"] = l.op;
  j["gemm"] = {{"m", l.m}, {"k", l.k}, {"n", l.n}};
  const double macs = l.matrix ? static_cast<double>(l.macs) : 0.0;
  j["macs"] = static_cast<int64_t>(macs);
  j["ops"] = 2 * macs;
  return j;
}

double layer_macs(const bl::LayerWork& l) { return l.matrix ? static_cast<double>(l.macs) : 0.0; }

ordered_json roof_point(const bl::LayerWork& l, double weight_bytes, double latency_s, const Roofline& roof) {
  const double oi = safe_div(2 * layer_macs(l), weight_bytes);
  return {{"name", l.name},
          {"oi_ops_per_weight_byte", oi},
          {"attainable_tops", roof.attainable_tops(oi)},
          {"achieved_tops", safe_div(2 * layer_macs(l), latency_s) / 1e12},
          {"bound", oi < roof.ridge_ops_per_byte() ? "memory" : "compute"}};
}

// Every layer's entry (layer_head, what `body(i, entry)` adds, then its speedup over the
// accelerator) and the roofline points of the matrix layers; `body` returns the layer's
// latency in seconds.
template <class Body>
std::pair<ordered_json, ordered_json> layer_entries(const bl::Workload& work, const ordered_json& acc, double elem,
                                                    const Roofline& roof, Body body) {
  ordered_json layers = ordered_json::array(), points = ordered_json::array();
  for (size_t i = 0; i < work.layers.size(); ++i) {
    const bl::LayerWork& l = work.layers[i];
    ordered_json j = layer_head(i, l);
    const double latency_s = body(i, j);
    j["speedup_of_accelerator"] = speedup(latency_s, acc_layer_latency(acc, i));
    layers.push_back(j);
    if (l.matrix) points.push_back(roof_point(l, static_cast<double>(l.weights) * elem, latency_s, roof));
  }
  return {layers, points};
}

ordered_json summary_json(int64_t batch, double latency_s, double macs, double peak_tops) {
  ordered_json s;
  const double tops = safe_div(2 * macs, latency_s) / 1e12;
  s["latency_s"] = latency_s;
  s["inferences_per_s"] = safe_div(static_cast<double>(batch), latency_s);
  s["macs"] = static_cast<int64_t>(macs);
  s["ops"] = 2 * macs;
  s["tops"] = tops;
  s["peak_tops"] = peak_tops;
  s["utilization"] = safe_div(tops, peak_tops);
  return s;
}

// Power, energy per inference and perf/W of a baseline next to the accelerator's
// (docs/energy.md): incremental perf/W divides by the die's own power, total adds its host
// share; the ratio is the accelerator's perf/W over the baseline's.
void add_power(ordered_json& b, const std::optional<bl::PowerSpec>& power, const ordered_json& acc) {
  if (!power) {
    b["power"] = nullptr;
    b["energy_per_inference_j"] = nullptr;
    b["perf_per_w"] = nullptr;
    b["accelerator_perf_per_w_ratio"] = nullptr;
    return;
  }
  const bl::PowerSpec& p = *power;
  auto opt = [](double v) -> ordered_json { return v > 0 ? ordered_json(v) : ordered_json(nullptr); };
  b["power"] = {{"idle_w", opt(p.idle_w)}, {"busy_w", p.busy_w}, {"tdp_w", opt(p.tdp_w)}, {"host_w", p.host_w},
                {"basis", p.basis}};
  const auto& s = b["summary"];
  const double ips = s["inferences_per_s"].get<double>();
  const double lat = s["latency_s"].get<double>();
  const int64_t batch = b["batch"].get<int64_t>();
  b["energy_per_inference_j"] = safe_div(p.busy_w * lat, static_cast<double>(batch));
  const double inc = safe_div(ips, p.busy_w), tot = safe_div(ips, p.busy_w + p.host_w);
  b["perf_per_w"] = {{"incremental", inc}, {"total", tot}};
  const ordered_json* ppw = nullptr;
  if (acc.contains("summary") && acc["summary"].contains("perf_per_w")) ppw = &acc["summary"]["perf_per_w"];
  if (ppw && inc > 0 && tot > 0) {
    b["accelerator_perf_per_w_ratio"] = {{"incremental", (*ppw)["incremental"].get<double>() / inc},
                                         {"total", (*ppw)["total"].get<double>() / tot}};
  } else {
    b["accelerator_perf_per_w_ratio"] = nullptr;
  }
}

ordered_json modelled_json(const bl::BaselineSpec& spec, bl::Precision precision, bool overridden,
                           const bl::Workload& work, const ordered_json& acc) {
  const bl::Estimate est = bl::estimate(spec, work, precision);
  const double peak = spec.peak_tops_at(precision);
  const double elem = static_cast<double>(bl::precision_bytes(precision));
  const Roofline roof{peak, spec.memory_bandwidth_gb_per_s};
  const double acc_s = acc_latency(acc);
  const double macs = static_cast<double>(work.total_macs());

  ordered_json b;
  // An override is its own entry: "a100:fp16" next to "a100" in one report.
  b["name"] = overridden ? spec.id + ":" + std::string(bl::precision_name(precision)) : spec.id;
  b["spec"] = spec.id;
  b["display_name"] = spec.name;
  b["kind"] = std::string(bl::kind_name(spec.kind));
  b["measured"] = false;
  b["source"] = spec.source;
  b["description"] = spec.description;
  b["precision"] = std::string(bl::precision_name(precision));
  b["precision_from"] = overridden ? "override" : "spec";
  b["batch"] = work.batch;
  b["peak_tops"] = peak;
  ordered_json peaks = ordered_json::object();
  for (const auto& [p, v] : spec.peak_tops) peaks[std::string(bl::precision_name(p))] = v;
  b["peak_tops_by_precision"] = peaks;
  b["memory"] = {{"technology", spec.memory_technology},
                 {"capacity_bytes", spec.memory_capacity_bytes},
                 {"bandwidth_gb_per_s", spec.memory_bandwidth_gb_per_s},
                 {"efficiency", spec.memory_efficiency}};
  b["on_chip"] = {{"capacity_bytes", spec.on_chip_bytes}, {"bandwidth_gb_per_s", spec.on_chip_bandwidth_gb_per_s}};
  ordered_json tiles = ordered_json::array();
  for (const auto& t : spec.efficiency.tiles) tiles.push_back({{"m", t.m}, {"n", t.n}, {"max", t.max}});
  b["efficiency_curve"] = {{"parallel_units", spec.efficiency.parallel_units},
                           {"k_half", spec.efficiency.k_half},
                           {"tiles", tiles}};
  b["launch_us"] = spec.launch_us;
  if (spec.host_link) {
    b["host_link"] = {{"bandwidth_gb_per_s", spec.host_link->bandwidth_gb_per_s},
                      {"latency_us", spec.host_link->latency_us}};
  } else {
    b["host_link"] = nullptr;
  }
  b["weights_on_chip"] = est.weights_on_chip;

  ordered_json s = summary_json(work.batch, est.latency_s, macs, peak);
  double compute = 0, dram = 0, chip = 0, over = 0, kernel = 0;
  for (const auto& e : est.layers) {
    compute += e.compute_s;
    dram += e.dram_s;
    chip += e.on_chip_s;
    over += e.overhead_s;
    kernel += e.latency_s - e.overhead_s;
  }
  s["kernel_s"] = kernel;
  s["overhead_s"] = over;
  s["host_link_s"] = est.host_link.total_s();
  s["compute_s"] = compute;
  s["dram_s"] = dram;
  s["on_chip_s"] = chip;
  s["dram_bytes"] = est.dram_bytes;
  s["weight_bytes"] = est.weight_bytes;
  b["summary"] = s;
  b["speedup_of_accelerator"] = speedup(est.latency_s, acc_s);

  auto [layers, points] = layer_entries(work, acc, elem, roof, [&](size_t i, ordered_json& j) {
    const bl::LayerEstimate& e = est.layers[i];
    j["efficiency"] = e.efficiency;
    if (e.tile >= 0) {
      const auto& t = spec.efficiency.tiles[static_cast<size_t>(e.tile)];
      j["kernel_tile"] = {{"m", t.m}, {"n", t.n}};
    } else {
      j["kernel_tile"] = nullptr;
    }
    j["compute_s"] = e.compute_s;
    j["dram_bytes"] = e.dram_bytes;
    j["on_chip_bytes"] = e.on_chip_bytes;
    j["dram_s"] = e.dram_s;
    j["on_chip_s"] = e.on_chip_s;
    j["overhead_s"] = e.overhead_s;
    j["latency_s"] = e.latency_s;
    j["tops"] = safe_div(2 * layer_macs(work.layers[i]), e.latency_s) / 1e12;
    j["bound"] = e.bound;
    return e.latency_s;
  });
  b["host_link_transfers"] = {{"to_device_bytes", est.host_link.to_device_bytes},
                              {"to_device_s", est.host_link.to_device_s},
                              {"to_host_bytes", est.host_link.to_host_bytes},
                              {"to_host_s", est.host_link.to_host_s}};
  b["roofline"] = roofline_json(peak, spec.memory_bandwidth_gb_per_s, macs, est.weight_bytes, est.dram_bytes,
                                s["tops"].get<double>(), points);
  add_power(b, spec.power, acc);
  b["layers"] = layers;
  return b;
}

ordered_json host_json(const bl::Workload& work, const ordered_json& acc, const bl::HostOptions& options) {
  const bl::HostMeasurement m = bl::measure_host(work, options);
  const double elem = 4.0;  // fp32
  const double macs = static_cast<double>(work.total_macs());
  const double weight_bytes = static_cast<double>(work.total_weights()) * elem;
  const double acc_s = acc_latency(acc);
  const double total = m.total_s();
  const Roofline roof{m.sgemm_tflops, m.triad_gb_per_s};

  ordered_json b;
  b["name"] = "host";
  b["spec"] = "host";
  b["display_name"] = "this host (" + m.cpu_model + ", OpenBLAS, measured)";
  b["kind"] = "cpu";
  b["measured"] = true;
  b["source"] = "measured on this machine";
  b["description"] = "Layers run on this machine's CPU: matrix layers as fp32 OpenBLAS sgemm, vector layers as "
                     "element-wise loops; median of timed calls after warm-up. Wall-clock: varies run to run.";
  b["precision"] = "fp32";
  b["precision_from"] = "measured";
  b["batch"] = work.batch;
  b["peak_tops"] = m.sgemm_tflops;
  b["memory"] = {{"bandwidth_gb_per_s", m.triad_gb_per_s}};

  std::vector<std::string> scaled;
  for (size_t i = 0; i < work.layers.size(); ++i) {
    if (m.layers[i].scale > 1) scaled.push_back(work.layers[i].name);
  }
  b["measurement"] = {{"cpu_model", m.cpu_model},
                      {"logical_cpus", m.logical_cpus},
                      {"blas_threads", m.blas_threads},
                      {"blas_config", m.blas_config},
                      {"statistic", "median"},
                      {"warmup_calls", options.warmup},
                      {"repeats", options.repeats},
                      {"max_gflop_per_call", options.max_gflop_per_call},
                      {"max_elements_per_call", options.max_elements_per_call},
                      {"budget_s", options.budget_s},
                      {"budget_exhausted", m.budget_exhausted},
                      {"peak_method", "median of five 1024x1024x1024 sgemm calls"},
                      {"bandwidth_method", "median of five a = b + 3c triads over 64 MiB fp32 arrays"},
                      {"scaled_layers", scaled}};
  ordered_json notes = ordered_json::array();
  notes.push_back("conv2d layers run as one sgemm of the implicit-GEMM shape; building the im2col matrix is not timed");
  notes.push_back("no framework dispatch or thread start-up beyond OpenBLAS's own is included");
  if (!scaled.empty()) {
    notes.push_back(std::to_string(scaled.size()) +
                    " layer(s) were too large to time whole within the budget: each was run on a slice (the first "
                    "rows of the GEMM, or a prefix of the elements) and its time scaled by full/slice; see "
                    "measurement.scaled_layers and each layer's scale");
  }
  if (m.budget_exhausted) notes.push_back("the time budget ran out: later layers were timed once each");
  b["notes"] = notes;

  ordered_json s = summary_json(work.batch, total, macs, m.sgemm_tflops);
  s["weight_bytes"] = weight_bytes;
  b["summary"] = s;
  b["speedup_of_accelerator"] = speedup(total, acc_s);

  auto [layers, points] = layer_entries(work, acc, elem, roof, [&](size_t i, ordered_json& j) {
    const bl::HostLayerMeasurement& h = m.layers[i];
    j["latency_s"] = h.seconds;
    j["tops"] = safe_div(2 * layer_macs(work.layers[i]), h.seconds) / 1e12;
    j["measured"] = h.measured;
    j["median_s"] = h.median_s;
    j["min_s"] = h.min_s;
    j["max_s"] = h.max_s;
    j["repeats"] = h.repeats;
    j["run_rows"] = h.run_rows;
    j["full_rows"] = h.full_rows;
    j["scale"] = h.scale;
    return h.seconds;
  });
  // Off-chip traffic is not measured; the dram flavour assumes every tensor and weight moves once.
  double dram = weight_bytes;
  for (const auto& l : work.layers) {
    if (l.layout_only) continue;
    for (const auto& in : l.inputs) dram += static_cast<double>(in.elements) * elem;
    dram += static_cast<double>(l.output.elements) * elem;
  }
  b["roofline"] = roofline_json(m.sgemm_tflops, m.triad_gb_per_s, macs, weight_bytes, dram, s["tops"].get<double>(),
                                points);
  add_power(b, std::nullopt, acc);  // this host's power is not measured
  b["layers"] = layers;
  return b;
}

bool looks_like_path(const std::string& name) {
  return name.find('/') != std::string::npos ||
         (name.size() > 5 && name.compare(name.size() - 5, 5, ".yaml") == 0);
}

}  // namespace

std::vector<std::string> available_baselines(const std::filesystem::path& dir) { return bl::available_specs(dir); }

std::filesystem::path default_baselines_dir() {
  if (const char* env = std::getenv("TESSERA_BASELINES_DIR"); env && *env) return env;
  return data_path("configs/baselines");
}

std::vector<std::string> split_baseline_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

baseline::Workload baseline_workload(const graph::Graph& graph, const compiler::Program& program) {
  bl::Workload w;
  w.name = graph.name;
  w.batch = program.batch;
  const int64_t batch = program.batch;
  std::vector<bool> is_output(graph.tensors.size(), false);
  for (int t : graph.outputs) is_output[static_cast<size_t>(t)] = true;
  // A flatten output is its input's storage: follow it to the producing layer or graph input.
  auto from_host = [&](int t) {
    while (t >= 0) {
      const int p = graph.tensors[static_cast<size_t>(t)].producer;
      if (p < 0) return true;
      const graph::Layer& pl = graph.layers[static_cast<size_t>(p)];
      if (!graph::is_layout_op(pl.op)) return false;
      t = pl.inputs.empty() ? -1 : pl.inputs[0];
    }
    return false;
  };
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    const graph::Layer& gl = graph.layers[i];
    bl::LayerWork l;
    l.name = gl.name;
    l.op = std::string(graph::op_name(gl.op));
    l.matrix = graph::is_matrix_op(gl.op);
    l.layout_only = graph::is_layout_op(gl.op);
    if (l.matrix && i < program.layers.size()) {
      // The compiler's view of the layer for the whole batch (it knows grouped and recurrent ops).
      const compiler::LayerInfo& li = program.layers[i];
      l.m = li.gemm_m;
      l.k = li.gemm_k;
      l.n = li.gemm_n;
      l.macs = li.macs;
      l.weights = li.weights;
    }
    for (int t : gl.inputs) {
      l.inputs.push_back({graph::shape_elements(graph.tensors[static_cast<size_t>(t)].shape) * batch, from_host(t)});
    }
    l.output = {graph::shape_elements(graph.tensors[static_cast<size_t>(gl.output)].shape) * batch,
                is_output[static_cast<size_t>(gl.output)]};
    w.layers.push_back(std::move(l));
  }
  for (int t : graph.inputs) w.host_input_elements += graph::shape_elements(graph.tensors[static_cast<size_t>(t)].shape) * batch;
  for (int t : graph.outputs) w.host_output_elements += graph::shape_elements(graph.tensors[static_cast<size_t>(t)].shape) * batch;
  return w;
}

ordered_json baselines_json(const std::vector<std::string>& names, const RunRecord& run,
                            const ordered_json& accelerator_report) {
  return baselines_json(names, run, accelerator_report, BaselineOptions{});
}

ordered_json baselines_json(const std::vector<std::string>& names, const RunRecord& run,
                            const ordered_json& accelerator_report, const BaselineOptions& options) {
  const std::filesystem::path dir = options.dir.empty() ? default_baselines_dir() : options.dir;
  const std::vector<std::string> available = available_baselines(dir);
  auto unknown = [&](const std::string& what) {
    throw InputError("unknown baseline '" + what + "'; available (in " + dir.string() + "): " +
                     join(available) + (available.empty() ? "none" : "") +
                     ", all (every one of those), host (measured on this CPU with OpenBLAS), or a path to a "
                     "baseline .yaml file");
  };

  // Expand "all", keep the first of duplicates.
  std::vector<std::string> wanted;
  auto add = [&](const std::string& n) {
    if (std::find(wanted.begin(), wanted.end(), n) == wanted.end()) wanted.push_back(n);
  };
  for (const std::string& n : names) {
    if (n == "all") {
      for (const auto& a : available) add(a);
    } else {
      add(n);
    }
  }

  const bl::Workload work = baseline_workload(run.graph, run.program);
  ordered_json out = ordered_json::array();
  for (const std::string& n : wanted) {
    if (n == "host") {
      out.push_back(host_json(work, accelerator_report, options.host));
      continue;
    }
    std::string stem = n, prec;
    if (!looks_like_path(n)) {
      if (const auto colon = n.find(':'); colon != std::string::npos) {
        stem = n.substr(0, colon);
        prec = n.substr(colon + 1);
      }
    }
    std::filesystem::path file;
    if (looks_like_path(stem)) {
      file = stem;
      if (const std::string why = not_a_regular_file(file); !why.empty()) {
        throw InputError("--baseline " + stem + ": cannot read the baseline spec file: " + why +
                         " (a spec file must be a regular YAML file)");
      }
    } else {
      if (std::find(available.begin(), available.end(), stem) == available.end()) unknown(n);
      file = dir / (stem + ".yaml");
    }
    const bl::BaselineSpec spec = bl::load_baseline_spec(file);
    bl::Precision precision = spec.precision;
    if (!prec.empty()) {
      const auto p = bl::parse_precision(prec);
      if (!p || !spec.peak_tops.count(*p)) {
        std::string have;
        for (const auto& [q, v] : spec.peak_tops) have += (have.empty() ? "" : ", ") + std::string(bl::precision_name(q));
        throw InputError("baseline '" + n + "': precision '" + prec + "' is not one " + spec.id +
                         " has; its peak_tops give: " + have);
      }
      precision = *p;
    }
    out.push_back(modelled_json(spec, precision, !prec.empty(), work, accelerator_report));
  }
  return out;
}

std::string baselines_markdown(const ordered_json& report) {
  if (!report.contains("baselines") || !report["baselines"].is_array() || report["baselines"].empty()) return "";
  std::ostringstream out;
  const auto& s = report["summary"];
  out << "\n## Baselines\n\n"
      << "| platform | precision | latency | inferences/s | TOPS | util. | accelerator speed-up | power | "
         "accelerator perf/W (incremental / total) |\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  // The accelerator's precision: the operand types of its matrix layers.
  std::vector<std::string> modes;
  for (const auto& l : report["layers"]) {
    if (l["macs"].get<int64_t>() == 0) continue;
    const std::string a = l["a_dtype"].get<std::string>(), w = l["b_dtype"].get<std::string>();
    const std::string mode = a == w ? a : a + " x " + w;
    if (std::find(modes.begin(), modes.end(), mode) == modes.end()) modes.push_back(mode);
  }
  out << "| " << report["arch"]["name"].get<std::string>() << " (this run) | " << (modes.empty() ? "-" : join(modes))
      << " | "
      << human_seconds(s["latency_s"].get<double>()) << " | " << fmt("%.1f", s["inferences_per_s"].get<double>())
      << " | " << fmt("%.2f", s["tops"].get<double>()) << " | " << fmt("%.1f%%", 100 * s["utilization"].get<double>())
      << " | 1.0x | " << (s.contains("power_w") ? fmt("%.1f W", s["power_w"].get<double>()) : std::string("-"))
      << " | 1.0x |\n";
  for (const auto& b : report["baselines"]) {
    const auto& bs = b["summary"];
    const std::string sp = b["speedup_of_accelerator"].is_number()
                               ? speedup_text(b["speedup_of_accelerator"].get<double>())
                               : std::string("-");
    const std::string name = b["display_name"].get<std::string>();
    const bool says_measured = name.find("measured") != std::string::npos;
    out << "| " << name << (b["measured"].get<bool>() && !says_measured ? " (measured)" : "") << " | "
        << b["precision"].get<std::string>() << " | " << human_seconds(bs["latency_s"].get<double>()) << " | "
        << fmt("%.1f", bs["inferences_per_s"].get<double>()) << " | " << fmt("%.3f", bs["tops"].get<double>()) << " | "
        << fmt("%.1f%%", 100 * bs["utilization"].get<double>()) << " | " << sp << " | " << power_text(b) << " | "
        << perf_per_w_text(b) << " |\n";
  }
  return out.str();
}

std::string baselines_console(const ordered_json& report) {
  if (!report.contains("baselines") || !report["baselines"].is_array() || report["baselines"].empty()) return "";
  std::ostringstream out;
  out << "  baselines (accelerator speed-up = baseline latency / accelerator latency):\n";
  for (const auto& b : report["baselines"]) {
    const auto& bs = b["summary"];
    out << "    " << b["name"].get<std::string>() << " (" << b["precision"].get<std::string>()
        << (b["measured"].get<bool>() ? ", measured" : "") << "): " << human_seconds(bs["latency_s"].get<double>())
        << ", " << fmt("%.3f", bs["tops"].get<double>()) << " TOPS";
    if (b["speedup_of_accelerator"].is_number()) out << ", speed-up " << speedup_text(b["speedup_of_accelerator"].get<double>());
    if (b.contains("accelerator_perf_per_w_ratio") && b["accelerator_perf_per_w_ratio"].is_object()) {
      out << ", perf/W " << perf_per_w_text(b) << " (incremental / total)";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace tessera::report
