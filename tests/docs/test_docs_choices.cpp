// The docs cannot drift from the code on what a key accepts (issue 33 item 2: configs.md said
// mac_modes operands were int8/int16 and workloads.md said `dtype: int8 | int16` when fp16 and
// bf16 worked). Each list is read from the parser itself, from the "is not one of: ..." message
// it gives for a value it refuses, and compared with the list the doc gives: a dtype, dataflow
// or memory technology added to the code fails this test until the docs list it too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"
#include "sim/precision/precision.h"

namespace tessera {
namespace {

using Names = std::set<std::string>;

std::string read_doc(const std::string& name) {
  const auto path = std::filesystem::path(TESSERA_SOURCE_DIR) / "docs" / name;
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);) out.push_back(line);
  return out;
}

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cell;
  bool code = false;
  for (size_t i = 1; i < row.size(); ++i) {  // after the leading '|'
    const char c = row[i];
    if (c == '`') code = !code;
    if (c == '|' && !code && row[i - 1] != '\\') {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      out.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      cell.clear();
    } else {
      cell += c;
    }
  }
  return out;
}

Names backticked(const std::string& text) {
  Names out;
  static const std::regex code("`([^`]+)`");
  for (std::sregex_iterator it(text.begin(), text.end(), code), end; it != end; ++it) out.insert((*it)[1]);
  return out;
}

// The cell in column `column` of the table row whose first cell is `key`, in the section that
// starts at the heading line `heading` (up to the next heading of any level).
std::string table_cell(const std::string& doc, const std::string& heading, const std::string& key,
                       const std::string& column) {
  const auto lines = lines_of(doc);
  auto it = std::find(lines.begin(), lines.end(), heading);
  EXPECT_NE(it, lines.end()) << "no heading '" << heading << "'";
  if (it == lines.end()) return "";
  std::vector<std::string> header;
  for (++it; it != lines.end() && !it->starts_with("#"); ++it) {
    if (!it->starts_with("|")) {
      header.clear();
      continue;
    }
    auto row = cells(*it);
    if (header.empty()) {
      header = row;
      continue;
    }
    if (!row.empty() && row[0] == key) {
      const auto col = std::find(header.begin(), header.end(), column);
      EXPECT_NE(col, header.end()) << "no column '" << column << "' in the table of " << key;
      if (col == header.end() || size_t(col - header.begin()) >= row.size()) return "";
      return row[col - header.begin()];
    }
  }
  ADD_FAILURE() << "no row " << key << " under '" << heading << "'";
  return "";
}

// The list after "one of: " (or between "(" and ")" after `after`) in a parser's message.
Names listed(const std::string& message, const std::string& after = "one of: ") {
  Names out;
  const auto at = message.find(after);
  EXPECT_NE(at, std::string::npos) << message;
  if (at == std::string::npos) return out;
  std::string rest = message.substr(at + after.size());
  if (after.ends_with("(")) rest = rest.substr(0, rest.find(')'));
  std::stringstream s(rest);
  for (std::string name; std::getline(s, name, ',');) {
    name.erase(0, name.find_first_not_of(' '));
    out.insert(name);
  }
  return out;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// A valid config with one line replaced.
std::string arch(const std::string& array_extra, const std::string& memory_extra = "") {
  return "name: t\nclock_mhz: 700\narray:\n  rows: 16\n  cols: 8\n  dataflow: ws\n" + array_extra +
         "unified_buffer:\n  capacity: 64 KiB\naccumulators:\n  entries: 64\nweight_fifo:\n  depth_tiles: 2\n"
         "weight_memory:\n  capacity: 1 MiB\n  bandwidth_gb_per_s: 10\n" + memory_extra +
         "pcie:\n  generation: 3\n  lanes: 4\n";
}

Names arch_choices(const std::string& text) {
  return listed(error_of([&] { parse_arch_config(YamlNode::load_string(text, "t.yaml")); }));
}

TEST(DocsChoices, DataflowsInConfigsMd) {
  std::string text = arch("");
  text.replace(text.find("dataflow: ws"), 12, "dataflow: zz");
  const Names code = arch_choices(text);
  EXPECT_EQ(code, (Names{"ws", "os", "is"}));  // what the registry holds today
  EXPECT_EQ(backticked(table_cell(read_doc("configs.md"), "### `array`", "`dataflow`", "allowed")), code);
}

TEST(DocsChoices, MacModeOperandsInConfigsMd) {
  const std::string doc = read_doc("configs.md");
  const Names a = arch_choices(arch("  mac_modes: [{a: zz, b: int8, rate: 1}]\n"));
  const Names b = arch_choices(arch("  mac_modes: [{a: int8, b: zz, rate: 1}]\n"));
  EXPECT_TRUE(a.count("fp16") && a.count("bf16")) << "the 16-bit floats are operands today";
  EXPECT_EQ(backticked(table_cell(doc, "### `array`", "`a`", "allowed")), a);
  EXPECT_EQ(backticked(table_cell(doc, "### `array`", "`b`", "allowed")), b);
}

TEST(DocsChoices, WeightMemoryTechnologiesInConfigsMd) {
  const Names code = arch_choices(arch("", "  technology: ZZ\n"));
  EXPECT_TRUE(code.count("HBM2-PC") && code.count("DDR3"));
  EXPECT_EQ(backticked(table_cell(read_doc("configs.md"), "### `weight_memory`", "`technology`", "allowed")), code);
}

TEST(DocsChoices, GraphDtypesInWorkloadsMd) {
  const std::string graph = "name: g\ndtype: zz\ninputs:\n  - {name: x, shape: [4]}\nlayers:\n  - {name: f, op: fc, units: 2}\n";
  const Names code =
      listed(error_of([&] { graph::parse_graph_yaml(YamlNode::load_string(graph, "g.yaml")); }), "allowed: ");
  EXPECT_TRUE(code.count("fp16") && code.count("bf16"));
  // The format's `dtype:` line: "dtype: int8   # default dtype of inputs and layers: a | b | c (...)".
  Names doc;
  for (const auto& line : lines_of(read_doc("workloads.md"))) {
    const std::string marker = "# default dtype of inputs and layers: ";
    const auto at = line.find(marker);
    if (!line.starts_with("dtype:") || at == std::string::npos) continue;
    std::string list = line.substr(at + marker.size());
    list = list.substr(0, list.find(" ("));
    std::stringstream s(list);
    for (std::string name; std::getline(s, name, '|');) {
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      doc.insert(name);
    }
  }
  EXPECT_EQ(doc, code) << "docs/workloads.md, YAML graph format, the `dtype:` line";
}

TEST(DocsChoices, PrecisionPolicyNamesInPrecisionAndExperimentsMd) {
  const Names code = listed(error_of([] { precision::parse_policy("zz-no-such-policy"); }), "not a policy name (");
  EXPECT_TRUE(code.count("first-last-int16") && code.count("bf16"));
  // docs/precision.md: the first column of the SPEC table, less the policy-file row.
  Names precision;
  bool in_table = false;
  for (const auto& line : lines_of(read_doc("precision.md"))) {
    if (line.starts_with("| SPEC |")) in_table = true;
    else if (in_table && !line.starts_with("|")) break;
    else if (in_table && !line.starts_with("|---")) {
      const std::string first = cells(line)[0];
      if (first.find("file") == std::string::npos) precision.merge(backticked(first));
    }
  }
  EXPECT_EQ(precision, code) << "docs/precision.md, the --precision SPEC table";
  // docs/experiments.md: the `precision` sweep key's values, before "or a policy file".
  std::string values = table_cell(read_doc("experiments.md"), "### Keys and values", "`precision`", "values");
  values = values.substr(0, values.find(", or a policy file"));
  EXPECT_EQ(backticked(values), code) << "docs/experiments.md, the precision key";
}

}  // namespace
}  // namespace tessera
