// Functional mode: the matrix layers (fc, conv2d, matmul): fp32 reference, integer
// GEMM on the accumulator model (or the PE-level reference), requantization.
#include "sim/functional/internal.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/common/error.h"

namespace tessera::functional::internal {

// ---- matrix layers ------------------------------------------------------------------

MatrixGeom Runner::geometry(const Layer& l) const {
  const Tensor& x = g_.tensors[l.inputs.at(0)];
  const Tensor& y = g_.tensors[l.output];
  MatrixGeom g;
  if (l.op == OpKind::kFc) {
    g.k = x.shape.back();
    g.f = y.shape.back();
    g.rows_per_sample = graph::shape_elements(x.shape) / g.k;
    g.fg = g.f;
    if (graph::shape_elements(y.shape) != g.rows_per_sample * g.f) unsupported(l, "this fc shape");
    return g;
  }
  if (x.shape.size() != 3 || y.shape.size() != 3) unsupported(l, "conv2d on tensors that are not [H, W, C]");
  g.conv = true;
  g.h = x.shape[0], g.w = x.shape[1], g.c = x.shape[2];
  g.oh = y.shape[0], g.ow = y.shape[1], g.f = y.shape[2];
  g.groups = std::max<int64_t>(1, l.groups);
  if (g.c % g.groups != 0 || g.f % g.groups != 0) unsupported(l, "conv2d groups that do not divide the channels");
  g.cg = g.c / g.groups;
  g.fg = g.f / g.groups;
  g.k = l.kernel_h * l.kernel_w * g.cg;
  g.rows_per_sample = g.oh * g.ow;
  return g;
}

// Pre-activation y[n x rows x f] = x * w in fp32; w is groups x k x fg.
void Runner::matrix_float(const Layer& l, const MatrixGeom& g, const float* x, int64_t n, const std::vector<float>& w,
                          float* y) const {
  if (!g.conv) {
    float_gemm(x, w.data(), n * g.rows_per_sample, g.k, g.f, y, g.f);
    return;
  }
  const Window win(l);
  std::vector<float> col(static_cast<std::size_t>(g.rows_per_sample * g.k));
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      im2col(x + s * g.h * g.w * g.c, g, win, grp, col.data());
      float_gemm(col.data(), w.data() + grp * g.k * g.fg, g.rows_per_sample, g.k, g.fg,
                 y + s * g.rows_per_sample * g.f + grp * g.fg, g.f);
    }
  }
}

void Runner::int_gemm_dispatch(const Layer& l, const int16_t* a, const int16_t* b, int64_t m, int64_t k, int64_t n,
                               int64_t* acc, uint8_t* flags) const {
  if (pe_) {
    try {
      pe_gemm(*pe_, a, b, m, k, n, model_, acc, flags);
    } catch (const InputError& e) {
      throw InputError("functional mode, layer " + l.name + ": " + e.what());
    }
  } else {
    int_gemm(a, b, m, k, n, model_, acc, flags);
  }
}

void Runner::matrix_layer(int li, std::vector<uint8_t>& flags) {
  const Layer& l = g_.layers[li];
  const int x = l.inputs.at(0), y = l.output;
  if (l.inputs.size() != 1) unsupported(l, "a matrix layer with a second activation input");
  const MatrixGeom g = geometry(l);
  const Activation act = l.activation;  // validate() checked it and the operand dtypes
  const Dtype a_dt = q_[x].dtype, b_dt = l.weight_dtype;

  // Weights: groups x k x fg, N(0, gain / fan_in) so activations stay O(1).
  const double gain = (act == Activation::kRelu || act == Activation::kRelu6) ? 2.0 : 1.0;
  const float stddev = static_cast<float>(std::sqrt(gain / static_cast<double>(g.k)));
  std::vector<float> w(static_cast<std::size_t>(g.groups * g.k * g.fg));
  const Stream ws(opt_.seed, kWeights, static_cast<uint64_t>(li));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = ws.normal(i) * stddev;

  // fp32 reference (the calibrated pre-activation range sets the accumulator headroom
  // and the activation table's input scale).
  const int64_t ey = elems(y);
  std::vector<float> pre(static_cast<std::size_t>(n_all_ * ey));
  matrix_float(l, g, ref_[x].data(), n_all_, w, pre.data());
  const double raw_max = reference_output(l, pre);

  // Weight scales: per output channel (column of each group's k x fg block) or per tensor.
  std::vector<double> w_scale(static_cast<std::size_t>(g.f), 1.0);
  if (is_int(b_dt)) {
    const int bits = int_bits(b_dt);
    std::vector<double> col_max(static_cast<std::size_t>(g.f), 0.0);
    for (int64_t grp = 0; grp < g.groups; ++grp)
      for (int64_t kk = 0; kk < g.k; ++kk)
        for (int64_t j = 0; j < g.fg; ++j) {
          double& m = col_max[grp * g.fg + j];
          m = std::max(m, static_cast<double>(std::abs(w[(grp * g.k + kk) * g.fg + j])));
        }
    const double tensor_max = *std::max_element(col_max.begin(), col_max.end());
    for (int64_t f = 0; f < g.f; ++f) w_scale[f] = symmetric_scale(opt_.per_channel ? col_max[f] : tensor_max, bits);
  }
  auto w_channel = [&](int64_t idx_in_block) {  // output channel of element i of the groups x k x fg block
    const int64_t grp = idx_in_block / (g.k * g.fg);
    return grp * g.fg + idx_in_block % g.fg;
  };

  if (!(is_int(a_dt) && is_int(b_dt))) {
    // Float path: operands rounded to their formats (an integer operand enters as
    // its dequantized codes), fp32 accumulation, activation in fp32.
    // fp8 weights: one scale for the tensor, its max onto the format's max (as the activations').
    double w8_scale = 1.0;
    if (dtype_is_fp8(b_dt)) {
      double w_max = 0;
      for (float v : w) w_max = std::max(w_max, static_cast<double>(std::abs(v)));
      w8_scale = fp8_scale(w_max, b_dt);
    }
    std::vector<float> wq(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (dtype_is_fp8(b_dt)) {
        wq[i] = round_fp8_scaled(w[i], b_dt, w8_scale);
      } else if (is_int(b_dt)) {
        const double s = w_scale[w_channel(static_cast<int64_t>(i))];
        wq[i] = static_cast<float>(dequantize(quantize(w[i], s, int_bits(b_dt)), s));
      } else {
        wq[i] = round_to_float_dtype(w[i], b_dt);
      }
    }
    std::vector<float> xv = q_[x].dequantized();
    // A pair the matrix units run as another float type (fp16 on bf16-only MXUs: the mode's
    // `runs_as`) has its operands converted to that type on the way in.
    const MacMode* mode = arch_.array.find_mode(a_dt, b_dt);
    if (mode != nullptr && mode->runs_as && !dtype_is_fp8(*mode->runs_as)) {
      for (float& v : wq) v = round_to_float_dtype(v, *mode->runs_as);
      for (float& v : xv) v = round_to_float_dtype(v, *mode->runs_as);
    }
    std::vector<float> out(static_cast<std::size_t>(n_eval_ * ey));
    matrix_float(l, g, xv.data(), n_eval_, wq, out.data());
    const auto om = static_cast<float>(l.output_multiplier);
    for (float& v : out) v = activate(act, v * om);
    store(y, out, flags);
    return;
  }

  // Integer path.
  headroom_factor_ = apply_headroom(raw_max, q_[x].scale, w_scale);
  const int wbits = int_bits(b_dt);
  std::vector<int16_t> wq(w.size());
  for (std::size_t i = 0; i < w.size(); ++i)
    wq[i] = static_cast<int16_t>(quantize(w[i], w_scale[w_channel(static_cast<int64_t>(i))], wbits));
  const double a_scale = q_[x].scale;
  std::vector<int16_t> xa(q_[x].q.begin(), q_[x].q.end());  // int8/int16 codes fit int16

  const int64_t rows = n_eval_ * g.rows_per_sample;
  std::vector<int64_t> acc(static_cast<std::size_t>(rows * g.f));
  std::vector<uint8_t> aflags(acc.size(), 0);
  if (!g.conv) {
    int_gemm_dispatch(l, xa.data(), wq.data(), rows, g.k, g.f, acc.data(), aflags.data());
  } else {
    const Window win(l);
    std::vector<int16_t> col(static_cast<std::size_t>(g.rows_per_sample * g.k));
    std::vector<int64_t> acc_g(static_cast<std::size_t>(g.rows_per_sample * g.fg));
    std::vector<uint8_t> flags_g(acc_g.size());
    for (int64_t s = 0; s < n_eval_; ++s) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        im2col(xa.data() + s * g.h * g.w * g.c, g, win, grp, col.data());
        int_gemm_dispatch(l, col.data(), wq.data() + grp * g.k * g.fg, g.rows_per_sample, g.k, g.fg, acc_g.data(),
                          flags_g.data());
        for (int64_t r = 0; r < g.rows_per_sample; ++r)
          for (int64_t j = 0; j < g.fg; ++j) {
            const int64_t dst = (s * g.rows_per_sample + r) * g.f + grp * g.fg + j;
            acc[dst] = acc_g[r * g.fg + j];
            aflags[dst] = flags_g[r * g.fg + j];
          }
      }
    }
  }
  for (std::size_t i = 0; i < acc.size(); ++i) flags[i] |= aflags[i];
  write_accumulators(l, acc, a_scale, w_scale, raw_max * std::abs(l.output_multiplier), flags);
}

// Stores a matrix layer's fp32 pre-activation `pre` (n_all samples) as its reference
// output: times the absorbed output multiplier, then the fused activation. Returns
// the calibrated max |pre-activation| before the multiplier (the accumulator range).
double Runner::reference_output(const Layer& l, std::vector<float>& pre) {
  const int64_t ey = elems(l.output);
  const double raw_max = calibration_max(pre, ey);
  const auto om = static_cast<float>(l.output_multiplier);
  for (float& v : pre) v = activate(l.activation, v * om);
  ref_[l.output] = std::move(pre);
  calib_max_[l.output] = calibration_max(ref_[l.output], ey);
  return raw_max;
}

// Accumulator headroom: an accumulator holds pre / (s_a s_w), so weight (second
// operand) scales below raw_max / (s_a 2^(width - 1 - h)) are raised to it, leaving
// the calibrated range h bits below saturation. Returns the largest raise (1: none).
double Runner::apply_headroom(double raw_max, double a_scale, std::vector<double>& w_scale) const {
  if (opt_.accumulator_headroom_bits < 0 || !(raw_max > 0) || !std::isfinite(raw_max)) return 1.0;
  const double limit = std::ldexp(1.0, model_.width_bits - 1 - opt_.accumulator_headroom_bits);
  const double floor = raw_max / (a_scale * limit);
  double factor = 1.0;
  for (double& s : w_scale) {
    if (s < floor) {
      factor = std::max(factor, floor / s);
      s = floor;
    }
  }
  return factor;
}

// Accumulators (output element i in channel i % w_scale.size()) -> the output
// tensor: dequantized for a float output, else requantized with fixed-point
// multipliers s_a s_w[c] |multiplier| / s_out and the fused activation applied.
// pre_max: calibrated max |pre-activation| (the sigmoid/tanh table's input range).
void Runner::write_accumulators(const Layer& l, const std::vector<int64_t>& acc, double a_scale,
                                const std::vector<double>& w_scale, double pre_max, std::vector<uint8_t>& flags) {
  const int y = l.output;
  const Activation act = l.activation;
  const auto channels = static_cast<int64_t>(w_scale.size());
  const double om = l.output_multiplier;
  if (!is_int(g_.tensors[y].dtype)) {  // integer MACs, float output: dequantize the accumulator
    std::vector<float> out(acc.size());
    for (std::size_t i = 0; i < acc.size(); ++i) {
      double real = static_cast<double>(acc[i]) * a_scale * w_scale[i % channels];
      if (om != 1.0) real *= om;
      out[i] = activate(act, static_cast<float>(real));
    }
    store(y, out, flags);
    return;
  }

  // Requantize the accumulators to the output dtype with fixed-point multipliers.
  QTensor& out = int_output(y);
  const int ybits = int_bits(out.dtype);
  const double y_scale = out.scale;
  const bool table = act == Activation::kSigmoid || act == Activation::kTanh;
  // Sigmoid/tanh go through a table: requantize to an input code of the output's
  // width with the pre-activation's calibrated scale, then code -> f(code * s) -> code.
  const double target = table ? symmetric_scale(pre_max, ybits) : y_scale;
  std::vector<FixedMultiplier> mult(static_cast<std::size_t>(channels));
  for (int64_t f = 0; f < channels; ++f) mult[f] = make_multiplier(a_scale * w_scale[f] * std::abs(om) / target);
  const int64_t relu6_max = saturate(round_half_away(6.0 / y_scale), ybits);
  for (std::size_t i = 0; i < acc.size(); ++i) {
    bool sat = false;
    // A negative multiplier (Mul by -c) negates the accumulator first.
    const int64_t a = om >= 0 ? acc[i] : (acc[i] == INT64_MIN ? INT64_MAX : -acc[i]);
    // relu/relu6 clamp before the output range does, so only what they let through
    // can saturate (a value that relu6 cuts to 6 anyway is not an error).
    int64_t v = apply_multiplier(a, mult[i % channels]);
    switch (act) {
      case Activation::kNone: v = saturate(v, ybits, &sat); break;
      case Activation::kRelu: v = saturate(std::max<int64_t>(v, 0), ybits, &sat); break;
      case Activation::kRelu6: v = saturate(std::min(std::max<int64_t>(v, 0), relu6_max), ybits, &sat); break;
      case Activation::kSigmoid:
      case Activation::kTanh:
        v = saturate(v, ybits, &sat);
        v = quantize(activate(act, static_cast<float>(dequantize(v, target))), y_scale, ybits, &sat);
        break;
    }
    out.q[i] = static_cast<int32_t>(v);
    if (sat) flags[i] |= kRequantSaturated;
  }
}

// Activation x activation (attention's Q K^T and P V): [..., M, K] x [..., K, N]
// per sample, leading axes broadcast; the second operand is loaded into the array
// as weights. Same accumulator model and requantization as fc.
void Runner::matmul_layer(const Layer& l, std::vector<uint8_t>& flags) {
  if (l.inputs.size() != 2) unsupported(l, "matmul without two activation inputs");
  const int xa = l.inputs[0], xb = l.inputs[1], y = l.output;
  const Shape &as = g_.tensors[xa].shape, &bs = g_.tensors[xb].shape, &ys = g_.tensors[y].shape;
  if (as.size() < 2 || bs.size() < 2 || ys.size() < 2) unsupported(l, "matmul of operands of rank < 2");
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const Shape lead(ys.begin(), ys.end() - 2);
  const std::vector<int64_t> ga = broadcast_map(Shape(as.begin(), as.end() - 2), lead);
  const std::vector<int64_t> gb = broadcast_map(Shape(bs.begin(), bs.end() - 2), lead);
  if (ga.empty() || gb.empty() || bs[bs.size() - 2] != k) unsupported(l, "this matmul shape");
  const int64_t ea = elems(xa), eb = elems(xb), ey = elems(y);
  const auto groups = static_cast<int64_t>(ga.size());
  // Visits (sample, group) with the offsets of the A block, the B block and the output.
  auto blocks = [&](int64_t samples, auto&& visit) {
    for (int64_t s = 0; s < samples; ++s)
      for (int64_t gi = 0; gi < groups; ++gi) visit(s * ea + ga[gi] * m * k, s * eb + gb[gi] * k * n, s * ey + gi * m * n);
  };
  std::vector<float> pre(static_cast<std::size_t>(n_all_ * ey));
  blocks(n_all_, [&](int64_t oa, int64_t ob, int64_t oy) {
    float_gemm(ref_[xa].data() + oa, ref_[xb].data() + ob, m, k, n, pre.data() + oy, n);
  });
  const double raw_max = reference_output(l, pre);

  if (!(q_[xa].integer() && q_[xb].integer())) {  // a float operand: fp32 products and sums
    const std::vector<float> av = q_[xa].dequantized(), bv = q_[xb].dequantized();
    std::vector<float> out(static_cast<std::size_t>(n_eval_ * ey));
    blocks(n_eval_, [&](int64_t oa, int64_t ob, int64_t oy) {
      float_gemm(av.data() + oa, bv.data() + ob, m, k, n, out.data() + oy, n);
    });
    const auto om = static_cast<float>(l.output_multiplier);
    for (float& v : out) v = activate(l.activation, v * om);
    store(y, out, flags);
    return;
  }

  std::vector<int16_t> aq(q_[xa].q.begin(), q_[xa].q.end()), bq(q_[xb].q.begin(), q_[xb].q.end());
  std::vector<double> b_scale(1, q_[xb].scale);
  headroom_factor_ = apply_headroom(raw_max, q_[xa].scale, b_scale);
  if (headroom_factor_ > 1.0) {  // B is requantized to the coarser scale as it is loaded
    const FixedMultiplier down = make_multiplier(q_[xb].scale / b_scale[0]);
    const int bits = int_bits(q_[xb].dtype);
    for (int16_t& v : bq) v = static_cast<int16_t>(requantize(v, down, bits));
  }
  std::vector<int64_t> acc(static_cast<std::size_t>(n_eval_ * ey));
  std::vector<uint8_t> aflags(acc.size(), 0);
  blocks(n_eval_, [&](int64_t oa, int64_t ob, int64_t oy) {
    int_gemm_dispatch(l, aq.data() + oa, bq.data() + ob, m, k, n, acc.data() + oy, aflags.data() + oy);
  });
  for (std::size_t i = 0; i < acc.size(); ++i) flags[i] |= aflags[i];
  write_accumulators(l, acc, q_[xa].scale, std::vector<double>(static_cast<std::size_t>(n), b_scale[0]),
                     raw_max * std::abs(l.output_multiplier), flags);
}

}  // namespace tessera::functional::internal
