// The per-layer column table: every column documented, keys unique, and the CSV and
// Markdown headers it generates are the files' published headers (docs, analysis/ read them).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sim/report/layer_columns.h"

using namespace tessera;

TEST(LayerColumns, EveryColumnHasADescriptionAndAUniqueKey) {
  std::set<std::string> keys, csv;
  for (const auto& c : report::layer_columns()) {
    EXPECT_FALSE(c.description.empty()) << c.key;
    if (c.value) {
      EXPECT_TRUE(keys.insert(std::string(c.key)).second) << "duplicate key " << c.key;
    } else {
      EXPECT_EQ(c.md_format, report::MdFormat::kMainCause) << "a column without a value must be derived";
    }
    if (!c.csv.empty()) {
      EXPECT_TRUE(csv.insert(std::string(c.csv)).second) << "duplicate CSV column " << c.csv;
    }
  }
  EXPECT_EQ(keys.size(), 48u);
}

TEST(LayerColumns, CsvHeaderIsTheFilesHeader) {
  EXPECT_EQ(report::layers_csv_header(),
            "index,name,op,output_shape,a_dtype,b_dtype,m,k,n,macs,weights,weight_bytes,latency_s,latency_cycles,"
            "start_s,end_s,tops,peak_tops,utilization,oi_macs_per_weight_byte,cycles_array_active,cycles_weight_shift,"
            "cycles_weight_stall,cycles_input_stall,cycles_raw_stall,cycles_non_matrix,cycles_pcie,spill_bytes_out,"
            "spill_bytes_in,energy_j,power_w,energy_mac_j,energy_register_j,energy_unified_buffer_j,"
            "energy_accumulators_j,energy_weight_fifo_j,energy_vector_j,energy_dram_j,energy_pcie_j,energy_leakage_j,"
            "energy_on_j");
}

TEST(LayerColumns, MarkdownTableFromALayerObject) {
  EXPECT_EQ(report::layers_markdown_header(),
            "| # | layer | op | MACs | latency | TOPS | util. | main cause | energy |\n"
            "|---:|---|---|---:|---:|---:|---:|---|---:|\n");
  // 2.5 ms at 1.234 TOPS of 2.468 peak; weight_stall has the most cycles.
  const nlohmann::ordered_json layer = {
      {"index", 3}, {"name", "fc,1"}, {"op", "fc"}, {"macs", 1000}, {"latency_s", 0.0025}, {"tops", 1.234},
      {"utilization", 0.5},
      {"cycles",
       {{"array_active", 10}, {"weight_shift", 0}, {"weight_stall", 30}, {"input_stall", 0}, {"raw_stall", 0},
        {"non_matrix", 0}, {"pcie", 20}, {"total", 60}}}};
  // A report from before energy: "-"; with it, engineering units.
  EXPECT_EQ(report::layer_markdown_row(layer), "| 3 | fc,1 | fc | 1000 | 2.500 ms | 1.23 | 50.0% | weight_stall | - |\n");
  nlohmann::ordered_json with_energy = layer;
  with_energy["energy_j"] = 0.0001234;
  EXPECT_EQ(report::layer_markdown_row(with_energy),
            "| 3 | fc,1 | fc | 1000 | 2.500 ms | 1.23 | 50.0% | weight_stall | 123.400 uJ |\n");
}
