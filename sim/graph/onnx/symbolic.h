#pragma once
// Private to the ONNX importer (sim/graph/onnx/): dimensions and integer constants as
// symbols in the batch N, checked 64-bit arithmetic, and the shape rules on symbolic
// shapes that the constant-folding and the activation paths share.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sim/graph/graph.h"

namespace tessera::graph::onnx_import {

// ---------------------------------------------------------------- symbolic dims
// A dimension or an integer constant: v x N^p, N the batch. Shape sub-graphs
// (Shape -> Gather -> Concat -> Reshape) carry the batch through as a symbol, so the
// importer knows which axis of every tensor holds the batch.
struct Sym {
  int64_t v = 0;
  int p = 0;
  bool operator==(const Sym&) const = default;
};
using SymShape = std::vector<Sym>;

std::string sym_text(Sym s);
std::string sym_shape_text(const SymShape& s);
inline bool is_one(Sym s) { return s.v == 1 && s.p == 0; }

// ---------------------------------------------------------------- checked arithmetic
// Every integer the importer computes from the file (folded constants, dimensions,
// windows, counts) goes through these: an overflow is a ShapeError, which the driver
// reports naming the node (exit 2), never a trap or undefined behaviour.
constexpr int64_t kMaxTensorElements = int64_t{1} << 50;  // any one tensor, at the bound batch
constexpr int64_t kMaxBoundDim = int64_t{1} << 24;        // a bound input dimension: the --batch cap
constexpr int kMaxBatchPower = 62;                         // N^p with N >= 2 overflows from p = 63
constexpr int64_t kMaxWindowValue = int64_t{1} << 20;
// Every shape is copied per value and per use: a rank of 10^5 (legal in the protobuf) would
// cost megabytes per value. ONNX models use ranks up to about 8.
constexpr int kMaxRank = 64;      // kernel, stride, dilation, pad: as in YAML graphs

[[noreturn]] void overflow(int64_t a, const char* op, int64_t b);
int64_t add64(int64_t a, int64_t b);
int64_t sub64(int64_t a, int64_t b);
int64_t mul64(int64_t a, int64_t b);
int64_t to_int64(double d, const std::string& what);
// The extent of a dilated window: dilation * (kernel - 1) + 1 (kernel, dilation >= 1).
int64_t window_span(int64_t kernel, int64_t dilation);
int batch_power(int a, int b);
Sym sym_mul(Sym a, Sym b);
int64_t eval(Sym s, int64_t batch);  // the dimension at a bound batch

// ---------------------------------------------------------------- shape rules on symbolic shapes
// Each throws ShapeError (graph.h) when the shapes do not fit; the driver names the node.
SymShape broadcast_sym(const SymShape& a, const SymShape& b);
int64_t norm_axis(int64_t axis, size_t rank, const std::string& what);
int64_t flatten_axis(int64_t axis, size_t rank);
std::vector<int64_t> norm_axes(std::vector<int64_t> axes, size_t rank, const std::string& what);
void check_perm(const std::vector<int64_t>& perm, size_t rank);
bool all_plain(const SymShape& s);                       // no dimension carries the batch
std::vector<int64_t> plain_dims(const SymShape& s);
int64_t count(const std::vector<int64_t>& d);             // element count, checked
std::vector<int64_t> broadcast_map(const std::vector<int64_t>& in, const std::vector<int64_t>& out);
// Calls f(idx) for every index of a row-major shape `dims`, in order (idx: one entry per axis).
template <class F>
void for_each_index(const std::vector<int64_t>& dims, F&& f) {
  std::vector<int64_t> idx(dims.size(), 0);
  const int64_t total = count(dims);
  for (int64_t k = 0; k < total; ++k) {
    f(idx);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}
// The exact integer (and batch-symbolic) form of an element-wise IR op; nullopt when the
// result is not a constant or the op has none (its fp32 kernel is in its OpDef).
std::optional<Sym> sym_binary(OpKind op, Sym a, Sym b);
std::optional<Sym> sym_unary(OpKind op, Sym s);
SymShape flatten_shape(const SymShape& in, int64_t axis);  // axis from flatten_axis
SymShape squeeze_shape(const SymShape& in, std::vector<int64_t> axes);
SymShape unsqueeze_shape(const SymShape& in, std::vector<int64_t> axes);
SymShape reduce_shape(const SymShape& in, const std::vector<int64_t>& axes, bool keep);  // axes normalised; none: all
SymShape permute_shape(const SymShape& in, const std::vector<int64_t>& perm);
SymShape gather_shape(const SymShape& data, const SymShape& indices, int64_t axis);
void check_slice_lists(const std::vector<int64_t>& starts, const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                       const std::vector<int64_t>& steps, size_t rank);
int64_t slice_len(int64_t dim, int64_t& b, int64_t& e, int64_t step);

}  // namespace tessera::graph::onnx_import
