// Functional mode: the run over the graph (inputs, calibration, the layer walk, the
// error of each layer and of the outputs), validation, and the report. The layer
// kernels are in kernels_matrix.cpp and kernels_vector.cpp.
#include "sim/functional/internal.h"

#include "sim/graph/ops/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>

#include "sim/common/error.h"
#include "sim/common/memory_limit.h"

namespace tessera::functional::internal {

using graph::FunctionalKernel;
using graph::op_def;

std::string op_text(OpKind op) {
  const std::string_view s = graph::op_name(op);
  if (s.empty() || s == "?") {
    std::string text = "#";  // (not "#" + to_string: GCC 12 -O3 warns falsely, -Wrestrict)
    text += std::to_string(static_cast<int>(op));
    return text;
  }
  return std::string(s);
}

[[noreturn]] void unsupported(const Layer& l, const std::string& what) {
  throw InputError("functional mode does not support " + what + " (layer " + l.name + ")");
}

Runner::Runner(const Graph& g, const ArchConfig& arch, const FunctionalOptions& opt) : g_(g), arch_(arch), opt_(opt) {
  n_eval_ = opt.batch;
  n_all_ = opt.batch * (1 + opt.calibration_batches);
  // The K extent of one matmul tile, as the compiler tiles: one array height where the
  // dataflow holds K in the array (ws, is); os streams K whole (kUnbounded: one partial sum
  // per output reaches the accumulators).
  model_.k_tile = std::max<int64_t>(
      1, array::dataflow_model(arch.array.dataflow).tile_bounds(array::ArrayDims{arch.array.rows, arch.array.cols}).k);
  model_.width_bits = static_cast<int>(arch.accumulators.width_bits);
  if (opt.use_pe_reference) {
    pe_ = std::make_unique<array::PeArrayReference>(arch.array.dataflow,
                                                    array::ArrayDims{arch.array.rows, arch.array.cols},
                                                    arch.array.double_buffered);
  }
  ref_.resize(g.tensors.size());
  q_.resize(g.tensors.size());
  calib_max_.assign(g.tensors.size(), 0.0);
  last_use_.assign(g.tensors.size(), -1);
  for (std::size_t li = 0; li < g.layers.size(); ++li)
    for (int t : g.layers[li].inputs) last_use_[t] = static_cast<int>(li);
  for (int t : g.outputs) last_use_[t] = static_cast<int>(g.layers.size());
}

FunctionalResult Runner::run() {
  FunctionalResult result;
  result.options = opt_;
  result.accumulator_bits = model_.width_bits;
  result.k_tile = model_.k_tile;
  for (int t : g_.inputs) result.input_saturated += make_input(t);
  for (std::size_t li = 0; li < g_.layers.size(); ++li) {
    result.layers.push_back(run_layer(static_cast<int>(li)));
    for (int t : g_.layers[li].inputs) {
      if (last_use_[t] == static_cast<int>(li)) release(t);
    }
  }
  Stats total;
  for (int t : g_.outputs) {
    const Tensor& ten = g_.tensors[t];
    OutputValues ov;
    ov.name = ten.name;
    ov.dtype = q_[t].dtype;
    ov.scale = q_[t].integer() ? q_[t].scale : 0.0;
    if (q_[t].integer()) ov.codes.assign(q_[t].q.begin(), q_[t].q.end());
    ov.values = q_[t].dequantized();
    ov.reference.assign(ref_[t].begin(), ref_[t].begin() + static_cast<std::ptrdiff_t>(ov.values.size()));
    for (std::size_t i = 0; i < ov.values.size(); ++i) total.add(ov.reference[i], ov.values[i]);
    result.outputs.push_back(std::move(ov));
  }
  result.output_sqnr_db = total.sqnr_db();
  result.output_max_abs_error = total.max_abs;
  return result;
}

void Runner::release(int t) {
  std::vector<float>().swap(ref_[t]);
  q_[t] = QTensor{};
}

// Max |x| over the calibration samples of a reference buffer of n_all samples
// (over the evaluated batch when there are no calibration batches).
double Runner::calibration_max(const std::vector<float>& v, int64_t per_sample) const {
  const int64_t begin = opt_.calibration_batches > 0 ? n_eval_ * per_sample : 0;
  const int64_t end = opt_.calibration_batches > 0 ? n_all_ * per_sample : n_eval_ * per_sample;
  double mx = 0;
  for (int64_t i = begin; i < end; ++i) mx = std::max(mx, static_cast<double>(std::abs(v[i])));
  return mx;
}

int64_t Runner::make_input(int t) {
  const int64_t e = elems(t);
  std::vector<float>& r = ref_[t];
  r.resize(static_cast<std::size_t>(n_all_ * e));
  const Stream eval(opt_.seed, kInputEval, static_cast<uint64_t>(t));
  const Stream cal(opt_.seed, kInputCalibration, static_cast<uint64_t>(t));
  const auto given = opt_.inputs.find(g_.tensors[t].name);
  if (given != opt_.inputs.end()) {
    if (static_cast<int64_t>(given->second.size()) != n_eval_ * e) {
      throw InputError("functional mode: input '" + g_.tensors[t].name + "' needs " + std::to_string(n_eval_ * e) +
                       " values (batch " + std::to_string(n_eval_) + " x " + std::to_string(e) + "), got " +
                       std::to_string(given->second.size()));
    }
    std::copy(given->second.begin(), given->second.end(), r.begin());
    for (int64_t i = n_eval_ * e; i < n_all_ * e; ++i) r[i] = cal.normal(static_cast<uint64_t>(i - n_eval_ * e));
  } else if (g_.tensors[t].integer_values) {
    // Integer host data (an attention mask): ones, i.e. nothing masked; random values
    // would turn BERT's (1 - mask) * -10000 into noise that swamps the scores.
    std::fill(r.begin(), r.end(), 1.0f);
  } else {
    for (int64_t i = 0; i < n_eval_ * e; ++i) r[i] = eval.normal(static_cast<uint64_t>(i));
    for (int64_t i = n_eval_ * e; i < n_all_ * e; ++i) r[i] = cal.normal(static_cast<uint64_t>(i - n_eval_ * e));
  }
  calib_max_[t] = calibration_max(r, e);
  std::vector<float> x(r.begin(), r.begin() + n_eval_ * e);
  std::vector<uint8_t> flags(x.size(), 0);
  store(t, x, flags);
  int64_t sat = 0;
  for (uint8_t f : flags) sat += (f & kRequantSaturated) ? 1 : 0;
  return sat;
}

// Converts fp32 values of the evaluated batch to tensor t's dtype (quantize with its
// calibrated scale, round to fp8 with its calibrated scale, or round to fp16/bf16) and
// stores them.
void Runner::store(int t, const std::vector<float>& values, std::vector<uint8_t>& flags) {
  QTensor& qt = q_[t];
  qt = QTensor{};
  qt.dtype = g_.tensors[t].dtype;
  if (qt.integer()) {
    const int bits = int_bits(qt.dtype);
    qt.scale = scale_of(t);
    qt.q.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      bool sat = false;
      qt.q[i] = static_cast<int32_t>(quantize(values[i], qt.scale, bits, &sat));
      if (sat) flags[i] |= kRequantSaturated;
    }
  } else if (dtype_is_fp8(qt.dtype)) {
    // fp8 keeps a per-tensor scale (the calibrated max onto the format's max), as FP8
    // deployments do; a value beyond it saturates at the max.
    qt.scale = fp8_scale(calib_max_[t], qt.dtype);
    qt.f.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      bool sat = false;
      qt.f[i] = round_fp8_scaled(values[i], qt.dtype, qt.scale, &sat);
      if (sat) flags[i] |= kRequantSaturated;
    }
  } else {
    qt.f.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) qt.f[i] = round_to_float_dtype(values[i], qt.dtype);
  }
}

// Prepares an integer output tensor (codes filled by the caller).
QTensor& Runner::int_output(int t) {
  QTensor& qt = q_[t];
  qt = QTensor{};
  qt.dtype = g_.tensors[t].dtype;
  qt.scale = scale_of(t);
  qt.q.assign(static_cast<std::size_t>(n_eval_ * elems(t)), 0);
  return qt;
}

LayerError Runner::run_layer(int li) {
  const Layer& l = g_.layers[li];
  const int y = l.output;
  const Tensor& yt = g_.tensors[y];
  LayerError err;
  err.name = l.name;
  err.op = op_text(l.op);
  err.a_dtype = l.inputs.empty() ? yt.dtype : g_.tensors[l.inputs[0]].dtype;
  err.b_dtype = err.a_dtype;
  if (graph::is_matrix_op(l.op)) err.b_dtype = l.weight_dtype;
  if ((l.op == OpKind::kMatmul || op_def(l.op).binary) && l.inputs.size() == 2) err.b_dtype = g_.tensors[l.inputs[1]].dtype;
  err.out_dtype = yt.dtype;
  std::vector<uint8_t> flags(static_cast<std::size_t>(n_eval_ * elems(y)), 0);
  headroom_factor_ = 1.0;

  // The OpDef row (sim/graph/ops) says which kernel runs the op.
  const graph::OpDef& def = op_def(l.op);
  switch (def.functional) {
    case FunctionalKernel::kMatrix: matrix_layer(li, flags); break;
    case FunctionalKernel::kMatmul: matmul_layer(l, flags); break;
    case FunctionalKernel::kPool: pool_layer(l, flags); break;
    case FunctionalKernel::kGlobalAvgPool: global_avgpool_layer(l, flags); break;
    case FunctionalKernel::kReduce: reduce_layer(l, flags); break;
    case FunctionalKernel::kCopy: flatten_layer(l, flags); break;
    case FunctionalKernel::kGather: move_layer(l, flags); break;
    case FunctionalKernel::kConcat: concat_layer(l, flags); break;
    case FunctionalKernel::kFp32:
      if (def.binary) {
        binary_layer(li, flags);
      } else if (def.unary) {
        unary_layer(l, flags);
      } else if (def.fp32) {
        fp32_layer(l, def.fp32(g_, l), flags);
      } else {
        unsupported(l, "op " + op_text(l.op));
      }
      break;
  }
  err.headroom_factor = headroom_factor_;

  const std::vector<float> out = q_[y].dequantized();
  const std::vector<float>& ref = ref_[y];
  Stats st;
  double ref_sq = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    st.add(ref[i], out[i]);
    ref_sq += static_cast<double>(ref[i]) * ref[i];
  }
  err.sqnr_db = st.sqnr_db();
  err.max_abs_error = st.max_abs;
  err.elements = st.count;
  err.ref_rms = st.count ? std::sqrt(ref_sq / static_cast<double>(st.count)) : 0.0;
  err.out_scale = q_[y].integer() ? q_[y].scale : 0.0;
  for (uint8_t f : flags) {
    err.saturated += f ? 1 : 0;
    err.accumulator_saturated += (f & kAccSaturated) ? 1 : 0;
    err.requant_saturated += (f & kRequantSaturated) ? 1 : 0;
  }
  return err;
}

void Runner::reference(const Layer& l, const FloatFn& fn) {
  std::vector<const float*> in;
  for (int t : l.inputs) in.push_back(ref_[t].data());
  const int y = l.output;
  ref_[y].assign(static_cast<std::size_t>(n_all_ * elems(y)), 0.0f);
  fn(in, n_all_, ref_[y].data());
  calib_max_[y] = calibration_max(ref_[y], elems(y));
}

// The float path of a vector op: dequantized (or already fp16/bf16) inputs, fp32
// arithmetic, the result rounded or quantized to the output dtype.
void Runner::float_path(const Layer& l, const FloatFn& fn, std::vector<uint8_t>& flags) {
  std::vector<std::vector<float>> vals;
  std::vector<const float*> in;
  for (int t : l.inputs) vals.push_back(q_[t].dequantized());
  for (const auto& v : vals) in.push_back(v.data());
  std::vector<float> out(static_cast<std::size_t>(n_eval_ * elems(l.output)));
  fn(in, n_eval_, out.data());
  store(l.output, out, flags);
}

bool Runner::all_int(const Layer& l) const {
  if (!is_int(g_.tensors[l.output].dtype)) return false;
  for (int t : l.inputs)
    if (!q_[t].integer()) return false;
  return true;
}

}  // namespace tessera::functional::internal

namespace tessera::functional {

using graph::Activation;
using graph::Graph;
using graph::Layer;
using graph::OpKind;
using graph::op_def;
using internal::kInf;
using internal::op_text;
using internal::unsupported;

bool functional_supports(OpKind op) {
  if (op == OpKind::kOpCount) return false;
  const graph::OpDef& def = op_def(op);
  // One of functional mode's integer paths, or the row's fp32 function.
  if (def.functional != graph::FunctionalKernel::kFp32) return true;
  return def.cls == graph::OpClass::kVector && (def.unary || def.binary || def.fp32);
}

namespace {

// Rejects unsupported graphs before any work is done.
// The run keeps, for the tensors of the layer being computed, fp32 reference values of
// every sample (evaluated + calibration) and quantized codes and values of the evaluated
// ones, plus the layer's weights a few times over. Checked against the memory this
// process may use before anything is allocated (a std::bad_alloc otherwise, audit D14).
void check_memory(const Graph& g, const FunctionalOptions& opt) {
  const double n_eval = static_cast<double>(opt.batch);
  const double n_all = n_eval * (1.0 + static_cast<double>(opt.calibration_batches));
  const double per_element = 4.0 * n_all + 8.0 * n_eval;
  double worst = 0;
  const Layer* worst_layer = nullptr;
  for (const Layer& l : g.layers) {
    double elements = static_cast<double>(graph::shape_elements(g.tensors[l.output].shape));
    for (int t : l.inputs) elements += static_cast<double>(graph::shape_elements(g.tensors[t].shape));
    const double bytes = elements * per_element + 16.0 * static_cast<double>(l.weight_count());
    if (bytes > worst) worst = bytes, worst_layer = &l;
  }
  const double limit = memory_limit_bytes();
  if (worst_layer && worst > limit) {
    throw InputError("functional mode: layer '" + worst_layer->name + "' of " + g.name + " needs about " +
                     gib_text(worst) + " at --functional-batch " + std::to_string(opt.batch) + " with " +
                     std::to_string(opt.calibration_batches) +
                     " calibration batches, more than this process may use (" + gib_text(limit) +
                     "); use a smaller --functional-batch or --functional-calibration");
  }
}

void validate(const Graph& g, const ArchConfig& arch, const FunctionalOptions& opt) {
  if (opt.batch < 1) throw InputError("functional mode: batch must be >= 1, got " + std::to_string(opt.batch));
  if (opt.calibration_batches < 0) {
    throw InputError("functional mode: calibration batches must be >= 0, got " + std::to_string(opt.calibration_batches));
  }
  if (opt.use_pe_reference && (arch.array.rows > 32 || arch.array.cols > 32)) {
    throw InputError("functional mode: the PE-level reference runs arrays up to 32x32; " + arch.name + " is " +
                     std::to_string(arch.array.rows) + "x" + std::to_string(arch.array.cols));
  }
  if (arch.accumulators.width_bits < 2 || arch.accumulators.width_bits > 64) {
    throw InputError("functional mode: accumulator width must be 2..64 bits");
  }
  for (const auto& given : opt.inputs) {
    const int t = g.find_tensor(given.first);
    if (t < 0 || std::find(g.inputs.begin(), g.inputs.end(), t) == g.inputs.end()) {
      throw InputError("functional mode: '" + given.first + "' is not a graph input of " + g.name);
    }
  }
  check_memory(g, opt);
  for (const Layer& l : g.layers) {
    if (!functional_supports(l.op)) {
      std::vector<std::string> names;
      for (const graph::OpDef* d : graph::all_ops())
        if (functional_supports(d->kind)) names.emplace_back(d->name);
      std::sort(names.begin(), names.end());
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      unsupported(l, "op " + op_text(l.op) + " (supported: " + list + ")");
    }
    if (l.inputs.empty()) unsupported(l, "a layer without inputs");
    if (l.op == OpKind::kPow && l.has_const &&
        static_cast<int64_t>(l.const_values.size()) != graph::shape_elements(l.const_shape)) {
      unsupported(l, "pow without a known exponent (the workload gives no constant values)");
    }
    if (graph::is_matrix_op(l.op)) {
      const Activation act = l.activation;
      if (act != Activation::kNone && act != Activation::kRelu && act != Activation::kRelu6 &&
          act != Activation::kSigmoid && act != Activation::kTanh) {
        unsupported(l, "fused activation " + std::string(graph::activation_name(act)));
      }
      const bool int32_b = l.op == OpKind::kMatmul ? l.inputs.size() > 1 && g.tensors[l.inputs[1]].dtype == Dtype::kInt32
                                                   : l.weight_dtype == Dtype::kInt32;
      if (g.tensors[l.inputs[0]].dtype == Dtype::kInt32 || int32_b) unsupported(l, "int32 matrix operands");
    }
  }
}

nlohmann::ordered_json sqnr_json(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

std::string format_db(double v) {
  if (v == kInf) return "exact";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f dB", v);
  return buf;
}

}  // namespace

FunctionalResult run_functional(const Graph& graph, const ArchConfig& arch, const FunctionalOptions& options) {
  validate(graph, arch, options);
  return internal::Runner(graph, arch, options).run();
}

nlohmann::ordered_json to_json(const FunctionalResult& r) {
  nlohmann::ordered_json j;
  j["reference"] = "fp32";
  j["batch"] = r.options.batch;
  j["seed"] = r.options.seed;
  j["calibration_batches"] = r.options.calibration_batches;
  j["weight_scales"] = r.options.per_channel ? "per_channel" : "per_tensor";
  j["pe_reference"] = r.options.use_pe_reference;
  j["accumulator_bits"] = r.accumulator_bits;
  if (r.k_tile == array::kUnbounded) {
    j["k_tile"] = nullptr;  // K streams whole (os)
  } else {
    j["k_tile"] = r.k_tile;
  }
  j["accumulator_headroom_bits"] = r.options.accumulator_headroom_bits;
  j["rounding"] = {{"integer", "half_away_from_zero"}, {"fp16_bf16", "nearest_even"}};
  j["output_sqnr_db"] = sqnr_json(r.output_sqnr_db);
  j["output_exact"] = r.output_sqnr_db == kInf;
  j["output_max_abs_error"] = r.output_max_abs_error;
  j["input_saturated"] = r.input_saturated;
  int64_t saturated = 0;
  for (const LayerError& e : r.layers) saturated += e.saturated;
  j["saturated"] = saturated;
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerError& e : r.layers) {
    nlohmann::ordered_json l;
    l["name"] = e.name;
    l["op"] = e.op;
    l["a_dtype"] = dtype_name(e.a_dtype);
    l["b_dtype"] = dtype_name(e.b_dtype);
    l["out_dtype"] = dtype_name(e.out_dtype);
    l["sqnr_db"] = sqnr_json(e.sqnr_db);
    l["exact"] = e.sqnr_db == kInf;
    l["max_abs_error"] = e.max_abs_error;
    l["ref_rms"] = e.ref_rms;
    l["out_scale"] = e.out_scale;
    l["elements"] = e.elements;
    l["saturated"] = e.saturated;
    l["accumulator_saturated"] = e.accumulator_saturated;
    l["requant_saturated"] = e.requant_saturated;
    if (e.headroom_factor != 1.0) l["headroom_factor"] = e.headroom_factor;
    layers.push_back(std::move(l));
  }
  j["layers"] = std::move(layers);
  return j;
}

std::string summary_line(const FunctionalResult& r) {
  std::string s = "functional: output SQNR " + format_db(r.output_sqnr_db);
  const LayerError* worst = nullptr;
  int64_t saturated = 0;
  for (const LayerError& e : r.layers) {
    saturated += e.saturated;
    if (!worst || e.sqnr_db < worst->sqnr_db) worst = &e;
  }
  if (worst) s += " (worst layer " + worst->name + " " + format_db(worst->sqnr_db) + ")";
  char buf[64];
  std::snprintf(buf, sizeof buf, ", max abs error %.3g", r.output_max_abs_error);
  s += buf;
  s += ", " + std::to_string(saturated) + " saturated outputs";
  if (saturated > 0) {
    int64_t acc = 0, requant = 0;
    for (const LayerError& e : r.layers) {
      acc += e.accumulator_saturated;
      requant += e.requant_saturated;
    }
    s += " (accumulator " + std::to_string(acc) + ", requantization " + std::to_string(requant) + ")";
  }
  if (r.input_saturated > 0) s += ", " + std::to_string(r.input_saturated) + " clipped inputs";
  return s;
}

}  // namespace tessera::functional
