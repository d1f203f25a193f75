#include "sim/graph/ops/registry.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <stdexcept>
#include <utility>

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

namespace {
// Vector-unit functions that are steps of a lowering rather than IR ops: the activation
// pipeline requantizes every accumulator it drains and may apply a fused relu6
// (isa::ActivationFn; fused relu, sigmoid and tanh are their ops' rows), and a lowered gru
// multiplies r * h (sim/compiler/lower_recurrent.cpp).
constexpr std::pair<std::string_view, EnergyClass> kLoweringSteps[] = {
    {"requantize", EnergyClass::kMultiplyAdd32},  // a fixed-point multiply and a rounding add
    {"relu6", EnergyClass::kAdd32},               // two compares
    {"gru_reset", EnergyClass::kMultiplyAdd32},   // mul's class
};
}  // namespace

std::optional<EnergyClass> vector_function_energy_class(std::string_view function) {
  // Built once: the energy model asks for every function of every layer it prices.
  static const std::map<std::string_view, EnergyClass> by_function = [] {
    std::map<std::string_view, EnergyClass> m(std::begin(kLoweringSteps), std::end(kLoweringSteps));
    for (const OpDef& d : op_registry().rows()) {
      if (d.energy_class == EnergyClass::kNoVectorWork) continue;
      if (!m.emplace(d.listing_name(), d.energy_class).second) {
        throw std::logic_error("op registry: vector function '" + std::string(d.listing_name()) + "' named twice");
      }
    }
    return m;
  }();
  const auto it = by_function.find(function);
  if (it == by_function.end()) return std::nullopt;
  return it->second;
}

}  // namespace tessera::graph
