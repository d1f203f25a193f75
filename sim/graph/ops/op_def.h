#pragma once
// One home per op: everything the simulator knows about an IR op's semantics, in one
// OpDef row of its family file (sim/graph/ops/<family>.cpp). The YAML loader, shape
// inference, the compiler's vector lowering, functional mode's fp32 reference and every
// "supported ops" message read these rows. Per-backend code that is not IR semantics
// stays keyed by OpKind in its own layer: matrix lowering, integer paths, ONNX handlers.
//
// Adding a vector op: one OpKind line in graph.h, one OpDef row (with its energy class and
// fp32 kernel) in its family file, one ONNX table row. tests/sim/graph/test_op_registry.cpp
// checks the tables are complete.
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

#include "sim/common/energy_class.h"
#include "sim/common/vector_class.h"
#include "sim/graph/graph.h"

namespace tessera {
class YamlNode;
}

namespace tessera::graph {

enum class OpClass {
  kMatrix,  // runs on the systolic array (GEMM view filled by `infer`)
  kVector,  // runs on the vector unit
  kAlias,   // no data moves: the output is a view of the input (flatten, reshape)
};

// Inputs the op takes in its YAML form. `const_operand`: one of them may be a constant
// (`constant: [shape]`), which then takes the place of the last input.
struct Arity {
  static constexpr int kMany = std::numeric_limits<int>::max();
  int min = 1, max = 1;
  bool const_operand = false;
};

// fp32 reference of a vector op: `in` holds one pointer per input (samples x per-sample
// elements, row-major), `out` receives samples x output elements.
using Fp32Kernel = std::function<void(const std::vector<const float*>& in, int64_t samples, float* out)>;

// An OpDef's energy class. It has no default: a row that leaves it out does not compile,
// so no op is priced by a silent default.
struct RequiredEnergyClass {
  EnergyClass value;
  constexpr RequiredEnergyClass(EnergyClass c) : value(c) {}  // implicit: rows write `.energy_class = EnergyClass::k...`
  constexpr operator EnergyClass() const { return value; }
};

// How functional mode (sim/functional) runs an op: from its fp32 function (`unary`,
// `binary`, `fp32`; quantized tensors are dequantized, computed and requantized), or by one
// of its own integer paths, which compute int8 codes as the hardware does.
enum class FunctionalKernel : uint8_t {
  kFp32,           // the OpDef's fp32 function (none: functional mode names the op unsupported)
  kMatrix,         // fc, conv2d: the array's integer GEMM over the layer's weights
  kMatmul,         // two activations through the array
  kPool,           // windowed max or average of codes
  kGlobalAvgPool,  // the average of codes over H and W
  kReduce,         // sums or maxima of codes along axes
  kCopy,           // the same elements (flatten, reshape): codes rescaled
  kGather,         // each output element copies one input element (transpose, slice, expand)
  kConcat,         // inputs' codes side by side, each rescaled
};

struct OpDef {
  OpKind kind = OpKind::kOpCount;
  std::string_view name;  // YAML, report and listing name
  // What one element operation of the op's vector-unit work costs (sim/common/energy_class.h;
  // the energy tables price the class). Composite ops take the class of their costliest
  // step (softmax: its exp); matrix ops that never run on the vector unit: kNoVectorWork.
  RequiredEnergyClass energy_class;
  OpClass cls = OpClass::kVector;
  Arity inputs;
  bool elementwise = false;  // one output element per (broadcast) input element
  // YAML attribute keys beyond name/op/input/inputs/dtype, and their parser (null: none).
  // The parser may check input ranks; it fails through `node` (file:line and layer).
  std::vector<std::string_view> yaml_keys;
  void (*parse_yaml)(const YamlNode& node, const Graph& g, Layer& layer) = nullptr;
  // Output shape from the attributes and the input shapes; fills the GEMM view of matrix
  // ops and normalises attributes (axes). Throws ShapeError.
  Shape (*infer)(const Graph& g, Layer& layer) = nullptr;

  // ---- vector unit (cls == kVector)
  // Element operations per output element (null: 1).
  int64_t (*work_per_output)(const Graph& g, const Layer& layer) = nullptr;
  // Row tiling: true when output row r needs only input row r of its first input (given
  // that input's rank). Null: `elementwise`.
  bool (*row_local)(const Layer& layer, size_t rank) = nullptr;
  bool reduction = false;  // reduces rows: tiled by input rows when not row-local
  bool windowed = false;   // sliding window over [H, W, C]: output row bands need input line bands
  // Output rows gather their elements from all over the first input (transpose): row tiles
  // keep that input whole and stream the output; a tile reads the elements it writes.
  bool gathers_rows = false;
  // Quantized models: the output holds integer codes of the layer's quant_dtype
  // (`quantizes`), or only copies of its inputs' codes (`copies_codes`: reshape, transpose,
  // slice, concat, maxpool, ...), so it holds codes of their type (model_quantization()).
  bool quantizes = false;
  bool copies_codes = false;
  // The ISA vector function shown in listings and traces (empty: `name`).
  std::string_view vector_function;
  // The kind of element operation (sim/common/vector_class.h): the vector unit's rate for
  // it. Composite ops take the class of their per-element step (softmax: its exp).
  VectorClass vector_class = VectorClass::kArithmetic;

  // ---- the op's fp32 reference: functional mode's (all null with `functional` kFp32:
  // functional mode names the op unsupported) and ONNX constant folding's
  float (*unary)(float x) = nullptr;            // element-wise function of one input
  float (*binary)(float a, float b) = nullptr;  // element-wise function of two (broadcast) inputs
  Fp32Kernel (*fp32)(const Graph& g, const Layer& layer) = nullptr;  // any other vector op
  FunctionalKernel functional = FunctionalKernel::kFp32;  // how functional mode runs it

  std::string_view listing_name() const { return vector_function.empty() ? name : vector_function; }
};

}  // namespace tessera::graph
