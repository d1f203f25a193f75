#pragma once
// Functional (numerical) mode: computes every layer of a workload on small seeded
// inputs twice, once in fp32 (the reference) and once at the graph's precision
// assignment (integer quantization with the accelerator's accumulator and
// requantization arithmetic, or fp16/bf16 rounding), and reports the error of each
// layer's output and of the graph outputs. Semantics: docs/precision-functional.md.
//
// The graph's dtypes are the precision assignment: a layer's activation operand is
// its (first) input tensor's dtype, its weight operand is layer.weight_dtype, its
// output is its output tensor's dtype.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/common/dtype.h"
#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"

namespace tessera::functional {

struct FunctionalOptions {
  int64_t batch = 1;              // samples to compute
  uint64_t seed = 1;              // inputs, weights and calibration data are seeded pseudo-random
  int64_t calibration_batches = 4;  // batches of `batch` samples for activation scales; 0: calibrate on the evaluated batch
  bool per_channel = false;       // symmetric per-output-channel weight scales instead of per-tensor
  bool use_pe_reference = false;  // matrix layers through PeArrayReference tile by tile (arrays <= 32x32)
  // Integer x integer matrix layers: raise the weight (second operand) scale where needed
  // so the calibrated pre-activation range fits the accumulators with this many bits
  // to spare; -1 keeps full-scale scales, which int16 x int16 on 32-bit accumulators
  // overflows (docs/precision-functional.md section 6).
  int accumulator_headroom_bits = 2;
  // Values for graph inputs by tensor name (batch x elements, row-major per sample),
  // replacing the seeded evaluated batch; calibration data stays seeded (use
  // calibration_batches = 0 to calibrate on these values).
  std::map<std::string, std::vector<float>> inputs;
};

struct LayerError {
  std::string name;
  std::string op;
  Dtype a_dtype = Dtype::kInt8;    // activation operand (first input)
  Dtype b_dtype = Dtype::kInt8;    // matrix ops: weights; binary ops: second input; others: = a_dtype
  Dtype out_dtype = Dtype::kInt8;
  double sqnr_db = 0;              // 10 log10(sum ref^2 / sum (ref - out)^2); +inf when exact (JSON null)
  double max_abs_error = 0;
  int64_t saturated = 0;              // output elements hit by either saturation below
  int64_t accumulator_saturated = 0;  // an accumulator add clamped at accumulators.width_bits
  int64_t requant_saturated = 0;      // requantization / activation table clamped to the output range
  int64_t elements = 0;            // output elements compared (batch x per-sample elements)
  double ref_rms = 0;              // RMS of the fp32 reference output
  double out_scale = 0;            // integer outputs: the calibrated scale; 0 for float outputs
  double headroom_factor = 1;      // matrix layers: weight scale / its full-scale value (> 1: raised for headroom)
};

// Values of one graph output as computed at the assigned precision (dequantized).
struct OutputValues {
  std::string name;
  Dtype dtype = Dtype::kInt8;
  double scale = 0;             // integer dtypes: the quantization scale
  std::vector<int64_t> codes;   // integer dtypes: the integer codes, batch x elements
  std::vector<float> values;    // dequantized values, batch x elements
  std::vector<float> reference; // fp32 reference values
};

struct FunctionalResult {
  FunctionalOptions options;
  int64_t accumulator_bits = 32;    // arch.accumulators.width_bits
  int64_t k_tile = 0;               // K extent of one matmul tile (arch.array.rows; os: array::kUnbounded)
  std::vector<LayerError> layers;
  double output_sqnr_db = 0;        // over all graph outputs together; +inf when exact (JSON null)
  double output_max_abs_error = 0;
  int64_t input_saturated = 0;      // graph-input elements clamped when quantized
  std::vector<OutputValues> outputs;
};

// Whether functional mode computes `op`: the matrix ops and integer paths it runs itself,
// and every vector op whose OpDef has an fp32 function.
bool functional_supports(graph::OpKind op);

// Throws InputError for ops or dtype combinations functional mode does not support
// ("functional mode does not support op X (layer Y)"), bad options, or
// use_pe_reference on an array larger than 32x32.
FunctionalResult run_functional(const graph::Graph& graph, const ArchConfig& arch, const FunctionalOptions& options);

// For report["functional"]. Infinite SQNR (exact) is written as null with "exact": true.
nlohmann::ordered_json to_json(const FunctionalResult& result);

// A one-line summary, e.g. "functional: output SQNR 41.2 dB (worst layer fc2 38.0 dB), 0 saturated".
std::string summary_line(const FunctionalResult& result);

}  // namespace tessera::functional
