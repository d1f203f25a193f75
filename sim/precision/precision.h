#pragma once
// Precision policies: which dtype each layer's activations and weights use.
// A policy rewrites the graph's dtypes; everything downstream (MAC rate, bytes
// moved and stored, vector throughput, peak) follows the dtypes.
#include <optional>
#include <string>
#include <vector>

#include "sim/common/dtype.h"
#include "sim/graph/graph.h"

namespace tessera::precision {

struct LayerPrecision {
  Dtype activations = Dtype::kInt8;  // the streamed operand (the layer's input tensor)
  Dtype weights = Dtype::kInt8;
};

struct LayerRule {
  std::string match;  // glob over layer names: * ? [abc]
  std::optional<Dtype> activations;
  std::optional<Dtype> weights;
};

struct PrecisionPolicy {
  std::string name = "int8";
  // The workload's own dtypes: each matrix layer at the dtype of its input tensor and its
  // weight_dtype as the graph declares them (`defaults` is unused then).
  bool from_workload = false;
  LayerPrecision defaults;
  std::optional<LayerPrecision> first_last;     // the first and last matrix layers
  std::vector<LayerRule> layers;                 // in order; later matches win
  std::optional<double> sqnr_below_db;           // int16 where the all-int8 SQNR is below this
  std::optional<LayerPrecision> sqnr_fallback;   // what those layers get (default int16 x int16)
};

// A dtype activations may hold ("int8", "fp8_e4m3", ... : operand_dtypes(false)) for all
// activations and weights, "first-last-int16", or a path to a policy YAML file
// (docs/precision.md; int4 only as weights). Throws InputError naming the spec or file and key.
PrecisionPolicy parse_policy(const std::string& spec);

// Where the precision that runs comes from (docs/precision.md, "Which precision runs").
enum class PolicySource { kDefault, kWorkload, kOption };

struct ChosenPolicy {
  PrecisionPolicy policy;
  PolicySource source = PolicySource::kDefault;
  std::string name;  // what reports name (workload.precision): --precision's text, else the policy's name
  // "bf16 (from the workload)", "int8 (--precision)", "int8 (default: the workload declares no dtypes)"
  std::string label() const;
};

// The policy a run uses: --precision's value when given (`option` non-empty), else the
// dtypes the workload declares (Graph::declared_dtype), else int8. A quantized model's own
// codes are kept under every policy (assign()).
ChosenPolicy choose_policy(const graph::Graph& graph, const std::string& option);

// What --precision changed of what the workload declares: one stderr line naming the option,
// the workload, its declared dtypes and how many matrix layers now run otherwise, and the
// matrix layers whose precision a quantized model's own codes keep. Empty when the option
// is not given or changes nothing the workload declares.
std::string override_note(const graph::Graph& graph, const ChosenPolicy& chosen);

// Glob match used for layer rules (exposed for tests).
bool glob_match(const std::string& pattern, const std::string& text);

// The precision of every matrix layer (index by layer) under the policy; vector
// layers get std::nullopt. `low_sqnr_layers` are layer names that the sqnr rule
// promotes (measured by the functional mode).
std::vector<std::optional<LayerPrecision>> assign(const graph::Graph& graph, const PrecisionPolicy& policy,
                                                  const std::vector<std::string>& low_sqnr_layers = {});

// Rewrites the graph's dtypes: weights of matrix layers, and each tensor as wide
// as its widest consumer needs (through vector layers too), so no value is
// narrowed between two 16-bit layers.
void apply(graph::Graph& graph, const std::vector<std::optional<LayerPrecision>>& assignment,
           Dtype default_activations);

}  // namespace tessera::precision
