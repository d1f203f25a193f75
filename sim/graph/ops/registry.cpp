#include "sim/graph/ops/registry.h"

#include <algorithm>
#include <stdexcept>

namespace tessera::graph {

void OpRegistry::add(OpDef def) {
  if (find(def.kind) || find(def.name)) {
    throw std::logic_error("op registry: a second row for op '" + std::string(def.name) + "'");
  }
  rows_.push_back(std::move(def));
}

const OpDef* OpRegistry::find(OpKind kind) const {
  for (const OpDef& d : rows_)
    if (d.kind == kind) return &d;
  return nullptr;
}

const OpDef* OpRegistry::find(std::string_view name) const {
  for (const OpDef& d : rows_)
    if (d.name == name) return &d;
  return nullptr;
}

const OpRegistry& op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    add_matrix_ops(r);
    add_recurrent_ops(r);
    add_elementwise_ops(r);
    add_normalize_ops(r);
    add_reduce_ops(r);
    add_window_ops(r);
    add_layout_ops(r);
    return r;
  }();
  return registry;
}

const OpDef& op_def(OpKind kind) {
  // Indexed by kind: op_def sits on hot paths (op_name, is_matrix_op).
  static const std::vector<const OpDef*> by_kind = [] {
    std::vector<const OpDef*> v(static_cast<size_t>(OpKind::kOpCount), nullptr);
    for (const OpDef& d : op_registry().rows()) v[static_cast<size_t>(d.kind)] = &d;
    return v;
  }();
  const auto i = static_cast<size_t>(kind);
  if (i >= by_kind.size() || !by_kind[i]) {
    throw std::logic_error("op registry: no row for op #" + std::to_string(static_cast<int>(kind)));
  }
  return *by_kind[i];
}

const OpDef* find_op(std::string_view name) { return op_registry().find(name); }

std::vector<const OpDef*> all_ops() {
  std::vector<const OpDef*> v;
  for (int i = 0; i < static_cast<int>(OpKind::kOpCount); ++i) {
    if (const OpDef* d = op_registry().find(static_cast<OpKind>(i))) v.push_back(d);
  }
  return v;
}

std::string supported_ops_text() {
  std::vector<std::string> names;
  for (const OpDef& d : op_registry().rows()) names.emplace_back(d.name);
  std::sort(names.begin(), names.end());
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

}  // namespace tessera::graph
