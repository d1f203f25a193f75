// Matrix layers on the systolic array: fc, conv2d / conv_transpose2d, matmul.
#include "sim/compiler/lowering.h"

#include "sim/graph/ops/registry.h"

namespace tessera::compiler::detail {

// Output head `flat` (over the output's leading axes) -> the operand's head index under broadcasting.
int64_t head_index(int64_t flat, const graph::Shape& lead_y, const graph::Shape& lead) {
  int64_t idx = 0, stride = 1;
  int64_t rem = flat;
  std::vector<int64_t> digits(lead_y.size());
  for (size_t d = lead_y.size(); d-- > 0;) {
    digits[d] = rem % lead_y[d];
    rem /= lead_y[d];
  }
  for (size_t d = lead.size(); d-- > 0;) {
    const size_t yd = d + lead_y.size() - lead.size();
    idx += (lead[d] == 1 ? 0 : digits[yd]) * stride;
    stride *= lead[d];
  }
  return idx;
}

void MatrixLowering::lower_matrix(int li) {
  const Layer& layer = l_.g_.layers[li];
  LayerInfo& info = l_.p_.layers[li];
  info.mapping = "array";
  l_.gemm_.check_mac_mode(layer);
  switch (layer.op) {
    case OpKind::kConv2d:
    case OpKind::kConvTranspose2d: lower_conv(li); return;
    case OpKind::kMatmul: lower_matmul(li); return;
    case OpKind::kLstm:
    case OpKind::kGru: lower_recurrent(li); return;
    default: break;
  }
  lower_fc(li);
}

// Reserves weight memory for a weight layer's B matrices (every group), returning their base.
uint64_t MatrixLowering::reserve_weights(const Layer& layer) {
  const uint64_t base = l_.weight_cursor_;
  l_.weight_cursor_ += static_cast<uint64_t>(elements_bytes(layer.weight_dtype, layer.gemm_groups * layer.gemm_k * layer.gemm_n));
  return base;
}

// Group g of a weight layer (fc, conv2d, conv_transpose2d) over m rows of A: its first
// input times its weights (row-major K x N per group, from `weights_base`).
GemmJob MatrixLowering::weight_gemm(int li, int64_t m, uint64_t weights_base, int64_t g) const {
  const Layer& layer = l_.g_.layers[static_cast<size_t>(li)];
  GemmJob job;
  job.li = li;
  job.M = m, job.K = layer.gemm_k, job.N = layer.gemm_n;
  job.a_dtype = l_.g_.tensors[static_cast<size_t>(layer.inputs[0])].dtype;
  job.b_dtype = layer.weight_dtype;
  job.y_dtype = l_.g_.tensors[static_cast<size_t>(layer.output)].dtype;
  job.activation = layer.activation;
  job.weight_base = weights_base + static_cast<uint64_t>(elements_bytes(layer.weight_dtype, g * job.K * job.N));
  job.weight_row_stride = job.N;
  return job;
}

// One head of a matmul over m rows of A: B is the second input, loaded from the unified buffer.
GemmJob MatrixLowering::ub_gemm(int li, int64_t m) const {
  const Layer& layer = l_.g_.layers[static_cast<size_t>(li)];
  GemmJob job;
  job.li = li;
  job.M = m, job.K = layer.gemm_k, job.N = layer.gemm_n;
  job.a_dtype = l_.g_.tensors[static_cast<size_t>(layer.inputs[0])].dtype;
  job.b_dtype = l_.g_.tensors[static_cast<size_t>(layer.inputs[1])].dtype;
  job.y_dtype = l_.g_.tensors[static_cast<size_t>(layer.output)].dtype;
  job.activation = layer.activation;
  job.b_from_ub = true;
  return job;
}

std::pair<int64_t, int64_t> im2col_channels(int64_t k0, int64_t k1, int64_t cin_g) {
  if (k1 - k0 < cin_g && k0 % cin_g < (k1 - 1) % cin_g + 1) return {k0 % cin_g, (k1 - 1) % cin_g + 1};
  return {0, cin_g};
}

// The report's facts for a layer's matrix products (m counts every group's rows; accumulates
// over passes).
void MatrixLowering::account_gemm(int li, int64_t m, int64_t k, int64_t n, int64_t groups, int64_t weights, Dtype a_dtype,
                            Dtype b_dtype) {
  LayerInfo& info = l_.p_.layers[static_cast<size_t>(li)];
  info.gemm_m += m;
  info.gemm_k = k;
  info.gemm_n = n;
  info.groups = groups;
  info.macs += m * k * n;
  info.weights = weights;
  info.a_dtype = a_dtype;
  info.b_dtype = b_dtype;
}

// fc over the last axis; rows = batch x the leading axes.
void MatrixLowering::lower_fc(int li) {
  const Layer& layer = l_.g_.layers[li];
  const int x = layer.inputs[0];
  const int y = layer.output;
  const int64_t M = l_.batch_ * layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n;
  const int64_t y_bytes = dtype_bytes(l_.g_.tensors[y].dtype);
  GemmJob job = weight_gemm(li, M, reserve_weights(layer), 0);
  job.a_region = [&](int64_t m0, int64_t m1, int64_t k0, int64_t k1) { return l_.rows_region(x, m0, m1, k0, k1); };
  job.out_region = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) { return l_.rows_region(y, m0, m1, n0, n1); };
  job.out_address = [&](int64_t m0, int64_t n0) {
    return l_.place_[y].offset + static_cast<uint64_t>((m0 * l_.place_[y].cols + n0) * y_bytes);
  };
  l_.gemm_.emit(job);
  account_gemm(li, M, K, N, 1, K * N, l_.g_.tensors[x].dtype, layer.weight_dtype);
}

// conv2d (implicit im2col; groups run one after another on the array) and
// conv_transpose2d (input pixels x (kernel x filters), overlap-added into the output).
void MatrixLowering::lower_conv(int li) {
  const Layer& layer = l_.g_.layers[li];
  const int x = layer.inputs[0];
  const int y = layer.output;
  const bool transposed = layer.op == OpKind::kConvTranspose2d;
  const int64_t G = layer.gemm_groups;
  const int64_t M = l_.batch_ * layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n;
  const int64_t in_channels = l_.place_[x].cols;
  const int64_t cin_g = in_channels / G;
  const int64_t cout_g = layer.out_features / G;
  const int64_t rows_per_sample = layer.gemm_m_per_sample;  // conv: output rows; transposed: input rows
  const int64_t y_bytes = dtype_bytes(l_.g_.tensors[y].dtype);
  const uint64_t layer_weight_base = reserve_weights(layer);

  const int64_t acc_half = std::max<int64_t>(1, l_.arch_.accumulators.entries / 2);
  // Groups share the M chunks: each chunk of input rows runs every group before the next.
  const int64_t chunk = G > 1 ? std::max<int64_t>(acc_half, 1) : M;
  for (int64_t c0 = 0; c0 < M; c0 += chunk) {
    const int64_t c1 = std::min(M, c0 + chunk);
    for (int64_t g = 0; g < G; ++g) {
      GemmJob job = weight_gemm(li, c1 - c0, layer_weight_base, g);
      job.overlap_add = transposed;
      const int64_t ch_base = g * cin_g;
      job.a_region = [&, c0, ch_base](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
        m0 += c0, m1 += c0;
        if (transposed) return l_.rows_region(x, m0, m1, ch_base + k0, ch_base + k1);
        const int64_t s0 = m0 / rows_per_sample, s1 = ceil_div(m1, rows_per_sample);
        const auto [lo, hi] = im2col_channels(k0, k1, cin_g);
        return l_.region(x, s0, s1, ch_base + lo, ch_base + hi);
      };
      const int64_t out_base = g * cout_g;
      job.out_region = [&, c0, out_base](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
        m0 += c0, m1 += c0;
        if (transposed) {
          // The products of these input pixels land around them: the samples' whole output, this group's columns.
          const int64_t s0 = m0 / rows_per_sample, s1 = ceil_div(m1, rows_per_sample);
          return l_.region(y, s0, s1, out_base, out_base + cout_g);
        }
        return l_.rows_region(y, m0, m1, out_base + n0, out_base + n1);
      };
      job.out_address = [&, c0, out_base](int64_t m0, int64_t n0) {
        if (transposed) return l_.place_[y].offset + static_cast<uint64_t>(out_base * y_bytes);
        return l_.place_[y].offset + static_cast<uint64_t>(((m0 + c0) * l_.place_[y].cols + out_base + n0) * y_bytes);
      };
      l_.gemm_.emit(job);
    }
  }
  if (transposed && layer.activation != graph::Activation::kNone) {
    // The nonlinearity can only run once every overlap has been added: one more pass.
    const OpKind fn = layer.activation == graph::Activation::kSigmoid ? OpKind::kSigmoid
                      : layer.activation == graph::Activation::kTanh  ? OpKind::kTanh
                      : layer.activation == graph::Activation::kRelu6 ? OpKind::kClip
                                                                      : OpKind::kRelu;
    VectorLowering(l_).emit_vector_by_samples(li, graph::op_def(fn), {y}, y, graph::shape_elements(l_.g_.tensors[y].shape));
  }
  account_gemm(li, M * G, K, N, G, G * K * N, l_.g_.tensors[x].dtype, layer.weight_dtype);
}

// Activation x activation (attention): for every sample and head, B is loaded into the
// array from the unified buffer as if it were a weight tile.
void MatrixLowering::lower_matmul(int li) {
  const Layer& layer = l_.g_.layers[li];
  const int a = layer.inputs[0], b = layer.inputs[1], y = layer.output;
  const auto& as = l_.g_.tensors[a].shape;
  const auto& bs = l_.g_.tensors[b].shape;
  const auto& ys = l_.g_.tensors[y].shape;
  const int64_t M = layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n;
  // Leading (head) axes: output index -> A and B group index under broadcasting.
  const graph::Shape lead_y(ys.begin(), ys.end() - 2);
  const graph::Shape lead_a(as.begin(), as.end() - 2), lead_b(bs.begin(), bs.end() - 2);
  auto group_index = [&](int64_t flat, const graph::Shape& lead) { return head_index(flat, lead_y, lead); };
  const int64_t rows_a = l_.place_[a].rows_per_sample, rows_b = l_.place_[b].rows_per_sample;
  const int64_t rows_y = l_.place_[y].rows_per_sample;
  const int64_t y_bytes = dtype_bytes(l_.g_.tensors[y].dtype);
  const int64_t G = layer.gemm_groups;
  l_.p_.layers[static_cast<size_t>(li)].mapping = "array_ub";
  for (int64_t s = 0; s < l_.batch_; ++s) {
    for (int64_t h = 0; h < G; ++h) {
      const int64_t ga = group_index(h, lead_a), gb = group_index(h, lead_b);
      const int64_t a_row0 = s * rows_a + ga * M, b_row0 = s * rows_b + gb * K, y_row0 = s * rows_y + h * M;
      GemmJob job = ub_gemm(li, M);
      job.a_region = [&, a_row0](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
        return l_.rows_region(a, a_row0 + m0, a_row0 + m1, k0, k1);
      };
      job.b_region = [&, b_row0](int64_t k0, int64_t k1, int64_t n0, int64_t n1) {
        return l_.rows_region(b, b_row0 + k0, b_row0 + k1, n0, n1);
      };
      job.out_region = [&, y_row0](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
        return l_.rows_region(y, y_row0 + m0, y_row0 + m1, n0, n1);
      };
      job.out_address = [&, y_row0](int64_t m0, int64_t n0) {
        return l_.place_[l_.storage(y)].offset + static_cast<uint64_t>(((y_row0 + m0) * l_.place_[y].cols + n0) * y_bytes);
      };
      l_.gemm_.emit(job);
    }
  }
  account_gemm(li, l_.batch_ * G * M, K, N, G, 0, l_.g_.tensors[a].dtype, l_.g_.tensors[b].dtype);
}

}  // namespace tessera::compiler::detail
