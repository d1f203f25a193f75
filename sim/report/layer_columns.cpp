#include "sim/report/layer_columns.h"

#include <array>
#include <deque>
#include <sstream>
#include <utility>
#include <vector>

#include "sim/common/dtype.h"
#include "sim/report/format.h"

namespace tessera::report {

using nlohmann::ordered_json;

namespace {

using F = const LayerFacts&;
using C = CsvFormat;
using M = MdFormat;

// Seconds from a cycle number, 0 when the layer never ran (no instruction of its own).
double seconds_at(int64_t cycle, double clock_hz) { return cycle >= 0 ? static_cast<double>(cycle) / clock_hz : 0.0; }

// In report.json's order; layers.csv and summary.md take their columns in the same order.
const LayerColumn kBeforeCycles[] = {
    {"index", "", "position in the program's layer order", [](F f) -> ordered_json { return f.index; },
     "index", C::kNumber, "#", M::kInteger},
    {"name", "", "layer (ONNX node) name", [](F f) -> ordered_json { return f.info.name; },
     "name", C::kQuotedText, "layer", M::kText},
    {"op", "", "IR op", [](F f) -> ordered_json { return f.info.op; }, "op", C::kText, "op", M::kText},
    {"output_shape", "", "output shape per sample", [](F f) -> ordered_json { return f.info.output_shape; },
     "output_shape", C::kQuotedText},
    {"mapping", "", "unit that runs it: array, array_ub, vector or alias",
     [](F f) -> ordered_json { return f.info.mapping; }},
    {"groups", "", "independent products per sample (conv groups, attention heads)",
     [](F f) -> ordered_json { return f.info.groups; }},
    {"a_dtype", "", "activation (first operand) precision",
     [](F f) -> ordered_json { return std::string(dtype_name(f.info.a_dtype)); }, "a_dtype", C::kText},
    {"b_dtype", "", "weight (second operand) precision",
     [](F f) -> ordered_json { return std::string(dtype_name(f.info.b_dtype)); }, "b_dtype", C::kText},
    {"gemm.m", "rows", "matrix view for the batch: rows of every group", [](F f) -> ordered_json { return f.info.gemm_m; },
     "m"},
    {"gemm.k", "elements", "matrix view: reduction length per group", [](F f) -> ordered_json { return f.info.gemm_k; },
     "k"},
    {"gemm.n", "columns", "matrix view: output columns per group", [](F f) -> ordered_json { return f.info.gemm_n; },
     "n"},
    {"macs", "MACs", "multiply-accumulates for the batch", [](F f) -> ordered_json { return f.info.macs; },
     "macs", C::kNumber, "MACs", M::kInteger},
    {"ops", "ops", "2 x MACs", [](F f) -> ordered_json { return f.ops; }},
    {"weights", "weights", "weight count", [](F f) -> ordered_json { return f.info.weights; }, "weights"},
    {"weight_bytes", "bytes", "read from weight memory, re-fetches included",
     [](F f) -> ordered_json { return f.info.weight_bytes; }, "weight_bytes"},
    {"latency_s", "s", "the run's time attributed to the layer", [](F f) -> ordered_json { return f.latency_s; },
     "latency_s", C::kNumber, "latency", M::kSeconds},
    {"latency_cycles", "cycles", "the run's cycles attributed to the layer",
     [](F f) -> ordered_json { return f.latency_cycles; }, "latency_cycles"},
    {"start_s", "s", "first of its instructions leaves the controller",
     [](F f) -> ordered_json { return seconds_at(f.stats.first_dispatch_cycle, f.clock_hz); }, "start_s"},
    {"end_s", "s", "last of its instructions finishes",
     [](F f) -> ordered_json { return seconds_at(f.stats.last_finish_cycle, f.clock_hz); }, "end_s"},
    {"tops", "TOPS", "ops / latency_s", [](F f) -> ordered_json { return f.tops; }, "tops", C::kNumber, "TOPS",
     M::kFixed2},
    {"peak_tops", "TOPS", "the array's peak at the layer's MAC mode; 0 for vector layers",
     [](F f) -> ordered_json { return f.peak_tops; }, "peak_tops"},
    {"utilization", "fraction", "tops / peak_tops",
     [](F f) -> ordered_json { return format::safe_div(f.tops, f.peak_tops); }, "utilization", C::kNumber, "util.",
     M::kPercent},
    {"", "", "the cycle cause with the most cycles ('-' for none)", nullptr, "", C::kNumber, "main cause",
     M::kMainCause},
    {"oi_macs_per_weight_byte", "MACs/byte", "operational intensity on weight-memory bytes",
     [](F f) -> ordered_json { return f.oi_macs_per_weight_byte; }, "oi_macs_per_weight_byte"},
    {"oi_ops_per_weight_byte", "ops/byte", "operational intensity on weight-memory bytes",
     [](F f) -> ordered_json { return 2 * f.oi_macs_per_weight_byte; }},
    {"oi_ops_per_dram_byte", "ops/byte", "operational intensity on weight bytes plus its spills over PCIe",
     [](F f) -> ordered_json { return f.oi_ops_per_dram_byte; }},
};

// One column per cycle bucket (engine::kBuckets: its name and description), between the
// rows above and below.
template <size_t B>
ordered_json bucket_cycles(F f) {
  return f.stats.cycles.by_bucket[B];
}
constexpr auto kBucketCycles = []<size_t... B>(std::index_sequence<B...>) {
  return std::array<ordered_json (*)(F), sizeof...(B)>{&bucket_cycles<B>...};
}(std::make_index_sequence<engine::kBucketCount>{});

const LayerColumn kAfterCycles[] = {
    {"cycles.total", "cycles", "sum of the causes", [](F f) -> ordered_json { return f.stats.cycles.total(); }},
    {"spill_bytes_out", "bytes", "activations written to host memory for this layer",
     [](F f) -> ordered_json { return f.info.spill_bytes_out; }, "spill_bytes_out"},
    {"spill_bytes_in", "bytes", "activations read back from host memory for this layer",
     [](F f) -> ordered_json { return f.info.spill_bytes_in; }, "spill_bytes_in"},
    {"row_tiles", "tiles", "> 0: the layer ran in this many row tiles", [](F f) -> ordered_json { return f.info.row_tiles; }},
    {"energy_j", "J", "energy of the layer's activity plus the static power over its latency (docs/energy.md)",
     [](F f) -> ordered_json { return f.energy.total(); }, "energy_j", C::kNumber, "energy", M::kJoules},
    {"power_w", "W", "energy_j / latency_s", [](F f) -> ordered_json { return format::safe_div(f.energy.total(), f.latency_s); },
     "power_w"},
    {"energy_breakdown_j.mac", "J", "useful and idle-but-clocked MACs", [](F f) -> ordered_json { return f.energy["mac"]; },
     "energy_mac_j"},
    {"energy_breakdown_j.register", "J", "array pipeline registers written",
     [](F f) -> ordered_json { return f.energy["register"]; }, "energy_register_j"},
    {"energy_breakdown_j.unified_buffer", "J", "unified-buffer reads and writes",
     [](F f) -> ordered_json { return f.energy["unified_buffer"]; }, "energy_unified_buffer_j"},
    {"energy_breakdown_j.accumulators", "J", "accumulator reads and writes",
     [](F f) -> ordered_json { return f.energy["accumulators"]; }, "energy_accumulators_j"},
    {"energy_breakdown_j.weight_fifo", "J", "weight-FIFO writes and reads",
     [](F f) -> ordered_json { return f.energy["weight_fifo"]; }, "energy_weight_fifo_j"},
    {"energy_breakdown_j.vector", "J", "vector-unit operations", [](F f) -> ordered_json { return f.energy["vector"]; },
     "energy_vector_j"},
    {"energy_breakdown_j.dram", "J", "weight-memory reads, row activations and background power",
     [](F f) -> ordered_json { return f.energy["dram"]; }, "energy_dram_j"},
    {"energy_breakdown_j.pcie", "J", "PCIe bytes", [](F f) -> ordered_json { return f.energy["pcie"]; }, "energy_pcie_j"},
    {"energy_breakdown_j.leakage", "J", "leakage power over the layer's latency",
     [](F f) -> ordered_json { return f.energy["leakage"]; }, "energy_leakage_j"},
    {"energy_breakdown_j.on", "J", "clock tree and ungated state over the layer's latency",
     [](F f) -> ordered_json { return f.energy["on"]; }, "energy_on_j"},
};

// In report.json's order: the rows before the cycles, a row per bucket, the rows after.
const std::vector<LayerColumn>& columns() {
  static const std::vector<LayerColumn> all = [] {
    static std::deque<std::string> names;  // the generated keys and headers, for the string_views
    std::vector<LayerColumn> out(std::begin(kBeforeCycles), std::end(kBeforeCycles));
    for (size_t b = 0; b < engine::kBucketCount; ++b) {
      const engine::BucketDef& def = engine::kBuckets[b];
      if (!std::string_view(def.part_of).empty()) continue;
      const std::string& key = names.emplace_back(std::string("cycles.") + def.name);
      const std::string& csv = names.emplace_back(std::string("cycles_") + def.name);
      out.push_back(LayerColumn{key, "cycles", def.description, kBucketCycles[b], csv});
    }
    out.insert(out.end(), std::begin(kAfterCycles), std::end(kAfterCycles));
    return out;
  }();
  return all;
}

// The layer's value of a column: "a.b" is key b of the layer's object a.
const ordered_json& at(const ordered_json& layer, std::string_view key) {
  const size_t dot = key.find('.');
  if (dot == std::string_view::npos) return layer[std::string(key)];
  return layer[std::string(key.substr(0, dot))][std::string(key.substr(dot + 1))];
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string main_cause(const ordered_json& layer) {
  std::string cause = "-";
  int64_t best = 0;
  for (const char* b : kCycleCauses) {
    if (layer["cycles"][b].get<int64_t>() > best) best = layer["cycles"][b].get<int64_t>(), cause = b;
  }
  return cause;
}

std::string md_cell(const LayerColumn& c, const ordered_json& layer) {
  switch (c.md_format) {
    case M::kInteger: return std::to_string(at(layer, c.key).get<int64_t>());
    case M::kText: return at(layer, c.key).get<std::string>();
    case M::kSeconds: return format::human_seconds(at(layer, c.key).get<double>());
    case M::kFixed2: return format::fmt("%.2f", at(layer, c.key).get<double>());
    case M::kPercent: return format::fmt("%.1f%%", 100 * at(layer, c.key).get<double>());
    case M::kMainCause: return main_cause(layer);
    case M::kJoules: {  // "-" in a report written before energy was (docs/energy.md)
      const ordered_json& v = at(layer, c.key);
      return v.is_number() ? format::human_joules(v.get<double>()) : std::string("-");
    }
  }
  return "";
}

}  // namespace

std::span<const LayerColumn> layer_columns() { return columns(); }

ordered_json layer_json(const LayerFacts& facts) {
  ordered_json l;
  for (const LayerColumn& c : columns()) {
    if (!c.value) continue;
    const size_t dot = c.key.find('.');
    if (dot == std::string_view::npos) {
      l[std::string(c.key)] = c.value(facts);
    } else {
      l[std::string(c.key.substr(0, dot))][std::string(c.key.substr(dot + 1))] = c.value(facts);
    }
  }
  return l;
}

std::string layers_csv_header() {
  std::string out;
  for (const LayerColumn& c : columns()) {
    if (!c.csv.empty()) out += (out.empty() ? "" : ",") + std::string(c.csv);
  }
  return out;
}

std::string layer_csv_row(const ordered_json& layer) {
  std::string out;
  bool first = true;
  for (const LayerColumn& c : columns()) {
    if (c.csv.empty()) continue;
    if (!first) out += ",";
    first = false;
    const ordered_json& v = at(layer, c.key);
    switch (c.csv_format) {
      case C::kNumber: out += v.dump(); break;
      case C::kText: out += v.get<std::string>(); break;
      case C::kQuotedText: out += csv_field(v.get<std::string>()); break;
    }
  }
  return out;
}

std::string layers_markdown_header() {
  std::string head = "|", rule = "|";
  for (const LayerColumn& c : columns()) {
    if (c.md.empty()) continue;
    head += " " + std::string(c.md) + " |";
    rule += c.md_format == M::kText || c.md_format == M::kMainCause ? "---|" : "---:|";
  }
  return head + "\n" + rule + "\n";
}

std::string layer_markdown_row(const ordered_json& layer) {
  std::string out = "|";
  for (const LayerColumn& c : columns()) {
    if (!c.md.empty()) out += " " + md_cell(c, layer) + " |";
  }
  return out + "\n";
}

}  // namespace tessera::report
