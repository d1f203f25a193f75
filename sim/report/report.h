#pragma once
// Metrics (DESIGN.md §6) and the report files: report.json, layers.csv, summary.md.
// Reports are deterministic: same inputs, byte-identical files (no times, no paths
// beyond the input names given on the command line).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <string_view>

#include "sim/common/atomic_file.h"
#include "sim/compiler/compiled.h"
#include "sim/config/arch_config.h"
#include "sim/engine/engine.h"
#include "sim/graph/graph.h"

namespace tessera::report {

struct RunRecord {
  const ArchConfig& arch;
  const graph::Graph& graph;
  const compiler::Program& program;
  const engine::RunStats& stats;
  std::string precision = "int8";  // the precision policy's name
};

// Roofline of one platform for one operational-intensity flavour.
struct Roofline {
  double peak_tops = 0;
  double bandwidth_gb_per_s = 0;
  double ridge_ops_per_byte() const { return peak_tops * 1e12 / (bandwidth_gb_per_s * 1e9); }
  double attainable_tops(double ops_per_byte) const;
};

// The parts of report.json to build, by top-level key; every one by default. A sweep point
// whose metrics read only `summary` leaves out the per-layer tables it would never send
// (issue 35); what is built is the same as in the whole report.
struct ReportParts {
  bool arch = true, workload = true, summary = true, layers = true, roofline = true, table3 = true;
  // Off: `summary` holds only the keys that do not read the cycle breakdown
  // (summary_key_reads_cycle_breakdown), for a run simulated without it
  // (engine::SimulateOptions::cycle_breakdown; issue 35).
  bool cycle_breakdown = true;
  // Whether the parts built read the cycle breakdown: the run must be simulated with it.
  bool reads_cycle_breakdown() const { return cycle_breakdown || layers || roofline || table3; }
};
// Whether `summary.<key>` reads the cycle breakdown (engine::RunStats::cycles, host_io, the
// layers' cycles). Every key does but those listed as not, so that a key added to the summary
// reads it until it is listed.
bool summary_key_reads_cycle_breakdown(std::string_view key);
nlohmann::ordered_json build_report(const RunRecord& run, const ReportParts& parts = {});
std::string layers_csv(const nlohmann::ordered_json& report);
// `precision_label` says which precision ran and why ("bf16 (from the workload)", run::PrecisionRan);
// empty: the summaries name workload.precision alone.
std::string summary_markdown(const nlohmann::ordered_json& report, const std::string& precision_label = "");
std::string console_summary(const nlohmann::ordered_json& report, const std::string& precision_label = "");

// report.json, layers.csv and summary.md for `dir`, rendered (the directory is created
// if needed; InputError if it cannot be). Write them with write_files_atomically, with
// any other output of the run (the trace), so they appear as one set or not at all.
std::vector<OutputFile> report_files(const std::filesystem::path& dir, const nlohmann::ordered_json& report,
                                     const std::string& precision_label = "");
// The same files' paths and roles, empty, without creating anything: to refuse another output
// over one of them before the run is simulated.
std::vector<OutputFile> report_file_targets(const std::filesystem::path& dir);
// report_files written as one set.
void write_report_files(const std::filesystem::path& dir, const nlohmann::ordered_json& report);

}  // namespace tessera::report
