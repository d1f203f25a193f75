// Recurrent layers (lstm, gru) on the array and the vector unit.
#include "sim/compiler/lowering.h"

#include "sim/graph/ops/registry.h"

namespace tessera::compiler::detail {

// LSTM / GRU: one GEMM projects the inputs of every step at once; then, step by step,
// the recurrent matmul on h(t-1), its activate into the gate buffer, and one vector
// instruction for the cell. Directions interleave so that one direction's matmul can
// overlap the other's cell. The recurrent weights are fetched again every step.
void MatrixLowering::lower_recurrent(int li) {
  const Layer& layer = l_.g_.layers[li];
  const bool lstm = layer.op == OpKind::kLstm;
  const int x = layer.inputs[0], y = layer.output;
  const Tensor& xt = l_.g_.tensors[x];
  const Dtype dt = l_.g_.tensors[y].dtype;
  const int64_t T = layer.gemm_m_per_sample, I = layer.gemm_k, H = layer.hidden, Gt = layer.gates(), D = layer.directions;
  const Dtype wt = layer.weight_dtype;
  const int64_t y_bytes = dtype_bytes(dt);
  const auto& scratch = l_.scratch_[static_cast<size_t>(li)];
  const int xg = scratch[0];
  auto hg = [&](int64_t d) { return scratch[static_cast<size_t>(1 + 3 * d)]; };
  auto hs = [&](int64_t d) { return scratch[static_cast<size_t>(2 + 3 * d)]; };
  auto cs = [&](int64_t d) { return scratch[static_cast<size_t>(3 + 3 * d)]; };
  const int h0 = layer.inputs.size() > 1 ? layer.inputs[1] : -1;
  const int c0_in = lstm && layer.inputs.size() > 2 ? layer.inputs[2] : -1;

  // Weight memory: per direction W (I x G*H) then R (H x G*H).
  std::vector<uint64_t> w_addr(static_cast<size_t>(D)), r_addr(static_cast<size_t>(D));
  for (int64_t d = 0; d < D; ++d) {
    w_addr[static_cast<size_t>(d)] = l_.weight_cursor_;
    l_.weight_cursor_ += static_cast<uint64_t>(elements_bytes(wt, I * Gt * H));
    r_addr[static_cast<size_t>(d)] = l_.weight_cursor_;
    l_.weight_cursor_ += static_cast<uint64_t>(elements_bytes(wt, H * Gt * H));
  }

  // 1. Input projections of all steps.
  for (int64_t d = 0; d < D; ++d) {
    GemmJob job;
    job.li = li;
    job.M = l_.batch_ * T, job.K = I, job.N = Gt * H;
    job.a_dtype = xt.dtype;
    job.b_dtype = layer.weight_dtype;
    job.y_dtype = dt;
    job.weight_base = w_addr[static_cast<size_t>(d)];
    job.weight_row_stride = Gt * H;
    const int64_t col0 = d * Gt * H;
    job.a_region = [&](int64_t m0, int64_t m1, int64_t k0, int64_t k1) { return l_.rows_region(x, m0, m1, k0, k1); };
    job.out_region = [&, col0](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
      return l_.rows_region(xg, m0, m1, col0 + n0, col0 + n1);
    };
    job.out_address = [&, col0](int64_t m0, int64_t n0) {
      return l_.place_[xg].offset + static_cast<uint64_t>((m0 * l_.place_[xg].cols + col0 + n0) * y_bytes);
    };
    l_.gemm_.emit(job);
  }

  // 2. The recurrence.
  auto recurrent_gemm = [&](int64_t d, int src, int64_t n_begin, int64_t n_end, bool from_initial) {
    GemmJob job;
    job.li = li;
    job.M = l_.batch_, job.K = H, job.N = n_end - n_begin;
    job.a_dtype = dt;
    job.b_dtype = layer.weight_dtype;
    job.y_dtype = dt;
    job.weight_base = r_addr[static_cast<size_t>(d)] + static_cast<uint64_t>(elements_bytes(wt, n_begin));
    job.weight_row_stride = Gt * H;
    job.a_region = [&, src, from_initial](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
      // The initial state input is [directions, hidden] per sample: its whole samples.
      return from_initial ? l_.region(src, m0, m1) : l_.rows_region(src, m0, m1, k0, k1);
    };
    const int out = hg(d);
    job.out_region = [&, out, n_begin](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
      return l_.rows_region(out, m0, m1, n_begin + n0, n_begin + n1);
    };
    job.out_address = [&, out, n_begin](int64_t m0, int64_t n0) {
      return l_.place_[out].offset + static_cast<uint64_t>((m0 * l_.place_[out].cols + n_begin + n0) * y_bytes);
    };
    l_.gemm_.emit(job);
  };
  const int64_t cell_work = lstm ? (layer.peepholes ? 16 : 13) : (layer.linear_before_reset ? 11 : 9);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t d = 0; d < D; ++d) {
      const bool backward = d == 1 || layer.reverse;
      const int64_t step = backward ? T - 1 - t : t;
      const bool initial = t == 0 && h0 >= 0;
      const int src = initial ? h0 : hs(d);
      if (!lstm && !layer.linear_before_reset) {
        // z and r first; then (r * h) times R_h.
        recurrent_gemm(d, src, 0, 2 * H, initial);
        Instruction v;
        v.op = Opcode::kVector;
        v.layer = li;
        v.vector_function = "gru_reset";  // r * h: a step of the lowered gru, not an IR op
        v.elements = l_.batch_ * H * 2;
        v.reads.push_back(l_.rows_region(hg(d), 0, l_.batch_, 0, 2 * H));
        v.reads.push_back(initial ? l_.region(h0, 0, l_.batch_) : l_.rows_region(hs(d), 0, l_.batch_, 0, H));
        v.writes.push_back(l_.rows_region(cs(d), 0, l_.batch_, 0, H));
        v.ub_read_bytes = static_cast<uint64_t>(l_.batch_ * 3 * H * y_bytes);
        v.ub_write_bytes = static_cast<uint64_t>(l_.batch_ * H * y_bytes);
        v.ub_address = l_.place_[cs(d)].offset;
        l_.emit(std::move(v));
        recurrent_gemm(d, cs(d), 2 * H, 3 * H, false);
      } else {
        recurrent_gemm(d, src, 0, Gt * H, initial);
      }
      Instruction cell;
      cell.op = Opcode::kVector;
      cell.layer = li;
      cell.vector_function = graph::op_def(layer.op).listing_name();  // lstm_cell / gru_cell
      cell.elements = l_.batch_ * H * cell_work;
      // Gate pre-activations of this step (the projection buffer, all samples) and the recurrent sums.
      cell.reads.push_back(l_.rows_region(xg, 0, l_.batch_ * T, d * Gt * H, (d + 1) * Gt * H));
      cell.reads.push_back(l_.rows_region(hg(d), 0, l_.batch_, 0, Gt * H));
      if (lstm) {
        if (t == 0 && c0_in >= 0) cell.reads.push_back(l_.region(c0_in, 0, l_.batch_));
        else cell.reads.push_back(l_.rows_region(cs(d), 0, l_.batch_, 0, H));
        cell.writes.push_back(l_.rows_region(cs(d), 0, l_.batch_, 0, H));
      } else if (initial) {
        cell.reads.push_back(l_.region(h0, 0, l_.batch_));
      }
      cell.writes.push_back(l_.rows_region(hs(d), 0, l_.batch_, 0, H));
      // h(t) also lands in the output sequence: row (step, direction) of every sample.
      cell.writes.push_back(l_.region(y, 0, l_.batch_));
      cell.ub_read_bytes = static_cast<uint64_t>(l_.batch_ * (2 * Gt * H + (lstm ? H : 0)) * y_bytes);
      cell.ub_write_bytes = static_cast<uint64_t>(l_.batch_ * (lstm ? 3 : 2) * H * y_bytes);
      cell.ub_address = l_.place_[y].offset + static_cast<uint64_t>((step * D + d) * H * y_bytes);
      l_.emit(std::move(cell));
    }
  }
  account_gemm(li, l_.batch_ * T * D, I + H, Gt * H, D, layer.weight_count(), xt.dtype, layer.weight_dtype);
}

}  // namespace tessera::compiler::detail
