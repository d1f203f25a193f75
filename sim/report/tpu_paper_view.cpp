#include "sim/report/tpu_paper_view.h"

#include <sstream>
#include <string_view>

#include "sim/report/format.h"

namespace tessera::report {

using nlohmann::ordered_json;
using format::fmt;
using format::safe_div;

namespace {

// "64K" for 65,536 PEs (the paper's "64K matrix"), else the count.
std::string pe_count_text(int64_t pes) {
  return pes % 1024 == 0 ? std::to_string(pes / 1024) + "K" : std::to_string(pes);
}

ordered_json row(int number, const std::string& label, int64_t count, const char* count_unit, double denominator) {
  return {{"row", number},
          {"label", label},
          {"value", 100 * safe_div(static_cast<double>(count), denominator)},
          {"unit", "%"},
          {"count", count},
          {"count_unit", count_unit}};
}


}  // namespace

ordered_json tpu_paper_view_json(const ArchConfig& arch, const engine::RunStats& stats, double tops, double peak_tops) {
  const engine::CycleBreakdown& c = stats.cycles;
  const int64_t total = c.total();
  const int64_t pes = arch.active_matrix_units() * arch.array.rows * arch.array.cols;
  const double total_cycles = static_cast<double>(total);
  const double total_pe_cycles = static_cast<double>(pes) * total_cycles;
  const int64_t active = c.array_stream();
  // Row 6 is everything that is not rows 1, 4 or 5, as in the paper (rows 1+4+5+6 = 100%).
  const int64_t non_matrix = total - active - c["weight_stall"] - c["weight_shift"];
  ordered_json rows = ordered_json::array();
  rows.push_back(row(1, "Array active cycles", active, "cycles", total_cycles));
  rows.push_back(row(2, "Useful MACs in " + pe_count_text(pes) + " matrix (% peak)",
                     stats.counter_sum("matrix_unit", "useful_pe_cycles"), "PE-cycles", total_pe_cycles));
  rows.push_back(row(3, "Unused MACs", stats.counter_sum("matrix_unit", "unused_pe_cycles"), "PE-cycles", total_pe_cycles));
  rows.push_back(row(4, "Weight stall cycles", c["weight_stall"], "cycles", total_cycles));
  rows.push_back(row(5, "Weight shift cycles", c["weight_shift"], "cycles", total_cycles));
  rows.push_back(row(6, "Non-matrix cycles", non_matrix, "cycles", total_cycles));
  rows.push_back(row(7, "RAW stalls", c["raw_stall"], "cycles", total_cycles));
  rows.push_back(row(8, "Input data stalls (PCIe)", c["pcie_input"], "cycles", total_cycles));
  rows.push_back({{"row", 9},
                  {"label", "TeraOps/sec (" + fmt(peak_tops >= 10 ? "%.0f" : "%.2g", peak_tops) + " peak)"},  // the paper's "92 peak"
                  {"value", tops},
                  {"unit", "TOPS"}});
  ordered_json t;
  t["source"] = "Jouppi et al., In-Datacenter Performance Analysis of a Tensor Processing Unit, ISCA 2017, Table 3";
  t["total_cycles"] = total;
  t["array_pes"] = pes;
  t["rows"] = rows;
  return t;
}

std::string tpu_paper_view_markdown(const ordered_json& r) {
  if (!r.contains("table3")) return "";
  static const char* const kFrom[] = {
      "array streaming at its MAC rate (`array_active` less the exposed drain)",
      "PEs in the tile, of the streaming cycles",
      "PEs outside partial tiles, of the streaming cycles",
      "`weight_stall`",
      "`weight_shift`",
      "the rest: exposed drain, `input_stall`, `raw_stall`, `non_matrix`, `pcie`",
      "`raw_stall`",
      "the part of `pcie` that is host input",
      "`summary.tops`",
  };
  std::ostringstream out;
  out << "\n## Table 3 view\n\nThe TPU paper's Table 3 rows from this run's counters (rows 1, 4, 5 and 6 sum to "
         "100%; rows 2 and 3 split row 1; rows 7 and 8 are parts of row 6).\n\n"
         "| row | Table 3 | value | from |\n|---:|---|---:|---|\n";
  for (const auto& row : r["table3"]["rows"]) {
    const int n = row["row"].get<int>();
    const bool tops = row["unit"].get<std::string>() == "TOPS";
    out << "| " << n << " | " << row["label"].get<std::string>() << " | "
        << (tops ? fmt("%.2f", row["value"].get<double>()) : fmt("%.1f%%", row["value"].get<double>())) << " | "
        << kFrom[n - 1] << " |\n";
  }
  return out.str();
}

}  // namespace tessera::report
