#pragma once
// The per-layer columns of the report: one row per metric, from which report.json's layer
// objects, layers.csv and summary.md's layer table are all generated. A new per-layer
// metric is one row in layer_columns.cpp.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "sim/compiler/compiled.h"
#include "sim/energy/energy.h"
#include "sim/engine/engine.h"

namespace tessera::report {

// What a column's value is computed from: the compiler's and the engine's facts about
// one layer, plus the figures build_report derives for it.
struct LayerFacts {
  size_t index = 0;
  const compiler::LayerInfo& info;
  const engine::LayerStats& stats;
  double clock_hz = 0;
  int64_t latency_cycles = 0;  // the run's cycles attributed to the layer
  double latency_s = 0;
  double ops = 0;              // 2 x MACs
  double peak_tops = 0;        // at the layer's MAC mode; 0 for vector layers
  double tops = 0;
  double oi_macs_per_weight_byte = 0;
  double oi_ops_per_dram_byte = 0;
  energy::Breakdown energy;    // the layer's activity plus the static power over its latency
};

// The causes of the cycle breakdown, in report order (they sum to the total).
using engine::kCycleCauses;

enum class CsvFormat { kNumber, kText, kQuotedText };  // JSON number; string as is; string CSV-quoted when needed
enum class MdFormat { kInteger, kText, kSeconds, kFixed2, kPercent, kMainCause, kJoules };

struct LayerColumn {
  std::string_view key;          // report.json layer key; "a.b" is key b of the object a
  std::string_view unit;         // "" for names and labels
  std::string_view description;
  nlohmann::ordered_json (*value)(const LayerFacts&);  // null: derived from the layer's JSON (Markdown only)
  std::string_view csv;          // layers.csv header; "": not in the CSV
  CsvFormat csv_format = CsvFormat::kNumber;
  std::string_view md;           // summary.md layer-table header; "": not in the table
  MdFormat md_format = MdFormat::kInteger;
};

std::span<const LayerColumn> layer_columns();

// One layer's report.json object, its layers.csv row (no newline) and its summary.md table
// row, each read from the columns; the CSV and Markdown read the layer's JSON object, so
// they render any report.json.
nlohmann::ordered_json layer_json(const LayerFacts& facts);
std::string layers_csv_header();
std::string layer_csv_row(const nlohmann::ordered_json& layer);
std::string layers_markdown_header();
std::string layer_markdown_row(const nlohmann::ordered_json& layer);

}  // namespace tessera::report
