#pragma once
// The op registry: one OpDef per OpKind, built on first use by explicit add_*_ops()
// calls (no static self-registration: the libraries are static archives, whose linker
// drops objects nothing refers to).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/graph/ops/op_def.h"

namespace tessera::graph {

class OpRegistry {
 public:
  void add(OpDef def);  // throws std::logic_error for a second row of the same kind or name
  const OpDef* find(OpKind kind) const;
  const OpDef* find(std::string_view name) const;
  const std::vector<OpDef>& rows() const { return rows_; }

 private:
  std::vector<OpDef> rows_;
};

// One per family file.
void add_matrix_ops(OpRegistry& r);
void add_recurrent_ops(OpRegistry& r);
void add_elementwise_ops(OpRegistry& r);
void add_normalize_ops(OpRegistry& r);
void add_reduce_ops(OpRegistry& r);
void add_window_ops(OpRegistry& r);
void add_layout_ops(OpRegistry& r);

const OpRegistry& op_registry();
const OpDef& op_def(OpKind kind);             // throws std::logic_error for an op without a row
const OpDef* find_op(std::string_view name);  // by YAML name; null if none
std::vector<const OpDef*> all_ops();          // in OpKind order
std::string supported_ops_text();             // every op name, sorted, ", "-separated

// The energy class of a vector-unit function as instructions and counters name it (an op's
// listing_name(), or a step of a lowering that is not an IR op: "requantize", "relu6",
// "gru_reset"); nullopt for a name that is neither, or an op without vector work.
std::optional<EnergyClass> vector_function_energy_class(std::string_view function);

}  // namespace tessera::graph
