#include "sim/compiler/compiler.h"

#include <algorithm>
#include <map>
#include <optional>

#include "sim/common/error.h"

namespace tessera::compiler {
namespace {

using graph::Graph;
using graph::Layer;
using graph::OpKind;
using graph::Tensor;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// First-fit allocator over the unified buffer's byte range.
class BufferAllocator {
 public:
  explicit BufferAllocator(uint64_t capacity) : capacity_(capacity) {}

  std::optional<uint64_t> allocate(uint64_t bytes) {
    uint64_t cursor = 0;
    for (auto it = used_.begin(); it != used_.end(); ++it) {
      if (it->first - cursor >= bytes) return take(cursor, bytes);
      cursor = it->first + it->second;
    }
    if (capacity_ - cursor >= bytes && cursor <= capacity_) return take(cursor, bytes);
    return std::nullopt;
  }
  void release(uint64_t offset) { used_.erase(offset); }
  uint64_t in_use() const {
    uint64_t n = 0;
    for (const auto& [o, b] : used_) n += b;
    return n;
  }
  uint64_t peak() const { return peak_; }

 private:
  uint64_t take(uint64_t offset, uint64_t bytes) {
    used_[offset] = bytes;
    peak_ = std::max(peak_, offset + bytes);
    return offset;
  }
  uint64_t capacity_;
  std::map<uint64_t, uint64_t> used_;  // offset -> bytes
  uint64_t peak_ = 0;
};

struct TensorPlace {
  int64_t rows = 0;  // batch x spatial positions
  int64_t cols = 0;  // features / channels
  int64_t rows_per_sample = 1;
  uint64_t bytes = 0;
  int alias_of = -1;  // flatten: shares the source's storage
  uint64_t offset = 0;
  bool allocated = false;
  std::vector<Region> reused;  // regions of dead tensors whose bytes this one overwrites
};

class Lowering {
 public:
  Lowering(const Graph& g, const ArchConfig& arch, int64_t batch)
      : g_(g), arch_(arch), total_batch_(batch), batch_(batch), ub_(arch.unified_buffer.capacity_bytes) {}

  Program run();

 private:
  int storage(int t) const { return place_[t].alias_of >= 0 ? storage(place_[t].alias_of) : t; }
  // Region of tensor `t` covering samples [s0, s1) and columns [c0, c1) of its own layout.
  Region region(int t, int64_t s0, int64_t s1, int64_t c0 = 0, int64_t c1 = -1) const;
  Region rows_region(int t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const;
  void allocate(int t, int layer_index);
  void emit(Instruction in, bool writes_tensor_storage = true);
  int64_t samples_per_chunk(int t) const;

  void lower_matrix(int li);
  void lower_vector(int li);
  // Lays out and (unless dry_run) lowers the whole graph for `batch` samples.
  void lower_pass(int64_t batch, bool dry_run);
  bool fits(int64_t batch);

  const Graph& g_;
  const ArchConfig& arch_;
  int64_t total_batch_;
  int64_t batch_;  // samples in the current pass
  BufferAllocator ub_;
  std::vector<TensorPlace> place_;
  std::vector<TensorPlace> prev_place_;  // the previous pass's layout: its bytes are overwritten too
  std::vector<int> last_use_;
  std::vector<bool> dead_;
  Program p_;
  std::vector<Instruction> body_;  // without read_weights; those are merged in at the end
  std::vector<Instruction> weight_reads_;
  int acc_half_ = 0;
  uint64_t weight_cursor_ = 0;
};

Region Lowering::rows_region(int t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
  const int s = storage(t);
  if (s != t) {
    // An alias (flatten) covers whole samples of its source, all columns.
    const int64_t rps_t = place_[t].rows_per_sample, rps_s = place_[s].rows_per_sample;
    const int64_t s0 = r0 / rps_t, s1 = ceil_div(r1, rps_t);
    return Region{Space::kUnifiedBuffer, s, s0 * rps_s, s1 * rps_s, 0, place_[s].cols};
  }
  return Region{Space::kUnifiedBuffer, t, r0, r1, c0, c1 < 0 ? place_[t].cols : c1};
}

Region Lowering::region(int t, int64_t s0, int64_t s1, int64_t c0, int64_t c1) const {
  const int64_t rps = place_[t].rows_per_sample;
  return rows_region(t, s0 * rps, s1 * rps, c0, c1);
}

int64_t Lowering::samples_per_chunk(int t) const {
  // Host transfers and vector work go in chunks of about one accumulator half so
  // that consumers can start before the whole tensor has moved.
  const int64_t rows = std::max<int64_t>(1, arch_.accumulators.entries / 2);
  return std::max<int64_t>(1, rows / place_[t].rows_per_sample);
}

void Lowering::allocate(int t, int layer_index) {
  TensorPlace& tp = place_[t];
  if (tp.alias_of >= 0 || tp.allocated) return;
  auto offset = ub_.allocate(tp.bytes);
  if (!offset) {
    const std::string where = layer_index >= 0 ? "layer '" + g_.layers[layer_index].name + "'" : "its inputs";
    throw InputError(g_.source + ": workload '" + g_.name + "' at batch " + std::to_string(batch_) +
                     " does not fit the unified buffer of '" + arch_.name + "' (" +
                     std::to_string(arch_.unified_buffer.capacity_bytes) + " bytes): " + where + " needs " +
                     std::to_string(tp.bytes) + " more bytes for tensor '" + g_.tensors[t].name + "' with " +
                     std::to_string(ub_.in_use()) +
                     " bytes live; use a smaller --batch or a larger unified_buffer.capacity");
  }
  tp.offset = *offset;
  tp.allocated = true;
  // Bytes reused from dead tensors: writers of t must wait for their readers.
  for (size_t o = 0; o < place_.size(); ++o) {
    const TensorPlace& other = place_[o];
    if (o == static_cast<size_t>(t) || !other.allocated || other.alias_of >= 0 || !dead_[o]) continue;
    if (other.offset < tp.offset + tp.bytes && tp.offset < other.offset + other.bytes) {
      tp.reused.push_back(Region{Space::kUnifiedBuffer, static_cast<int32_t>(o), 0, other.rows, 0, other.cols});
    }
  }
  for (size_t o = 0; o < prev_place_.size(); ++o) {
    const TensorPlace& other = prev_place_[o];
    if (!other.allocated || other.alias_of >= 0) continue;
    if (other.offset < tp.offset + tp.bytes && tp.offset < other.offset + other.bytes) {
      tp.reused.push_back(Region{Space::kUnifiedBuffer, static_cast<int32_t>(o), 0, other.rows, 0, other.cols});
    }
  }
}

void Lowering::emit(Instruction in, bool writes_tensor_storage) {
  if (writes_tensor_storage) {
    std::vector<Region> extra;
    for (const Region& w : in.writes) {
      if (w.space != Space::kUnifiedBuffer) continue;
      const auto& reused = place_[w.buffer].reused;
      extra.insert(extra.end(), reused.begin(), reused.end());
    }
    in.writes.insert(in.writes.end(), extra.begin(), extra.end());
  }
  body_.push_back(std::move(in));
}

void Lowering::lower_matrix(int li) {
  const Layer& layer = g_.layers[li];
  const int x = layer.inputs[0];
  const int y = layer.output;
  const Tensor& xt = g_.tensors[x];
  const auto& a = arch_.array;
  const int64_t M = batch_ * layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n;
  const int64_t acc_half = std::max<int64_t>(1, arch_.accumulators.entries / 2);
  int64_t mt = acc_half, kt = a.rows, nt = a.cols;
  switch (a.dataflow) {
    case array::Dataflow::kWeightStationary: break;                          // B: k<=rows, n<=cols
    case array::Dataflow::kOutputStationary: mt = std::min(a.rows, acc_half); break;  // C: m<=rows, n<=cols
    case array::Dataflow::kInputStationary: mt = std::min(a.cols, acc_half); break;   // A^T: k<=rows, m<=cols
  }
  const int64_t a_bytes = dtype_bytes(xt.dtype);
  const int64_t b_bytes = dtype_bytes(layer.weight_dtype);
  const int64_t y_bytes = dtype_bytes(g_.tensors[y].dtype);
  const int64_t in_channels = place_[x].cols;
  const int64_t out_rows_per_sample = layer.gemm_m_per_sample;
  LayerInfo& info = p_.layers[li];
  const uint64_t layer_weight_base = weight_cursor_;
  weight_cursor_ += static_cast<uint64_t>(K * N * b_bytes);

  for (int64_t m0 = 0; m0 < M; m0 += mt) {
    const int64_t m1 = std::min(M, m0 + mt);
    // Input rows this chunk reads: the samples its output rows belong to.
    const int64_t s0 = m0 / out_rows_per_sample, s1 = ceil_div(m1, out_rows_per_sample);
    for (int64_t n0 = 0; n0 < N; n0 += nt) {
      const int64_t n1 = std::min(N, n0 + nt);
      const int half = acc_half_;
      acc_half_ ^= 1;
      const Region acc{Space::kAccumulators, half, 0, m1 - m0, 0, n1 - n0};
      for (int64_t k0 = 0; k0 < K; k0 += kt) {
        const int64_t k1 = std::min(K, k0 + kt);
        Instruction rw;
        rw.op = Opcode::kReadWeights;
        rw.layer = li;
        rw.bytes = static_cast<uint64_t>((k1 - k0) * (n1 - n0) * b_bytes);
        rw.weight_address = layer_weight_base + static_cast<uint64_t>((k0 * N + n0) * b_bytes);
        weight_reads_.push_back(rw);
        info.weight_bytes += rw.bytes;

        Instruction mm;
        mm.op = Opcode::kMatmul;
        mm.layer = li;
        mm.tile = array::GemmTile{m1 - m0, k1 - k0, n1 - n0};
        mm.a_dtype = xt.dtype;
        mm.b_dtype = layer.weight_dtype;
        mm.accumulate = k0 > 0;
        mm.weight_tiles = 1;
        mm.ub_read_bytes = static_cast<uint64_t>((m1 - m0) * (k1 - k0) * a_bytes);
        // Implicit im2col: a K tile covers kernel positions x input channels.
        int64_t c0 = 0, c1 = in_channels;
        if (layer.op == OpKind::kFc) {
          c0 = k0, c1 = k1;
        } else if (k1 - k0 < in_channels && k0 % in_channels < (k1 - 1) % in_channels + 1) {
          c0 = k0 % in_channels, c1 = (k1 - 1) % in_channels + 1;
        }
        if (layer.op == OpKind::kFc) {
          mm.reads.push_back(rows_region(x, m0, m1, c0, c1));
        } else {
          mm.reads.push_back(region(x, s0, s1, c0, c1));
        }
        mm.writes.push_back(acc);
        emit(std::move(mm), false);
      }
      Instruction act;
      act.op = Opcode::kActivate;
      act.layer = li;
      act.rows = m1 - m0;
      act.cols = n1 - n0;
      act.function = layer.activation;
      act.reads.push_back(acc);
      act.writes.push_back(rows_region(y, m0, m1, n0, n1));
      act.ub_write_bytes = static_cast<uint64_t>(act.rows * act.cols * y_bytes);
      act.ub_address = place_[y].offset + static_cast<uint64_t>((m0 * place_[y].cols + n0) * y_bytes);
      emit(std::move(act));
    }
  }
  info.gemm_m += M;
  info.gemm_k = K;
  info.gemm_n = N;
  info.macs += M * K * N;
  info.weights = K * N;
  info.a_dtype = xt.dtype;
  info.b_dtype = layer.weight_dtype;
}

void Lowering::lower_vector(int li) {
  const Layer& layer = g_.layers[li];
  const int y = layer.output;
  if (graph::is_layout_op(layer.op)) return;  // flatten: an alias, nothing moves
  LayerInfo& info = p_.layers[li];
  info.a_dtype = info.b_dtype = g_.tensors[y].dtype;
  VectorOp vop = VectorOp::kAdd;
  switch (layer.op) {
    case OpKind::kMaxPool: vop = VectorOp::kMaxPool; break;
    case OpKind::kAvgPool: vop = VectorOp::kAvgPool; break;
    case OpKind::kGlobalAvgPool: vop = VectorOp::kGlobalAvgPool; break;
    case OpKind::kConcat: vop = VectorOp::kConcat; break;
    case OpKind::kAdd: vop = VectorOp::kAdd; break;
    case OpKind::kMul: vop = VectorOp::kMul; break;
    case OpKind::kSigmoid: vop = VectorOp::kSigmoid; break;
    case OpKind::kTanh: vop = VectorOp::kTanh; break;
    case OpKind::kRelu: vop = VectorOp::kRelu; break;
    default: break;
  }
  const int64_t out_per_sample = graph::shape_elements(g_.tensors[y].shape);
  // Element operations per output element: a pooling window reads kh*kw inputs.
  int64_t work_per_output = 1;
  if (layer.op == OpKind::kMaxPool || layer.op == OpKind::kAvgPool) work_per_output = layer.kernel_h * layer.kernel_w;
  if (layer.op == OpKind::kGlobalAvgPool) {
    const auto& s = g_.tensors[layer.inputs[0]].shape;
    work_per_output = s[0] * s[1];
  }
  const int64_t chunk = samples_per_chunk(y);
  for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
    const int64_t s1 = std::min(batch_, s0 + chunk);
    Instruction v;
    v.op = Opcode::kVector;
    v.layer = li;
    v.vector_op = vop;
    v.elements = (s1 - s0) * out_per_sample * work_per_output;
    for (int in : layer.inputs) {
      v.reads.push_back(region(in, s0, s1));
      v.ub_read_bytes += static_cast<uint64_t>((s1 - s0) * graph::shape_elements(g_.tensors[in].shape) *
                                               dtype_bytes(g_.tensors[in].dtype));
    }
    v.writes.push_back(region(y, s0, s1));
    v.ub_write_bytes = static_cast<uint64_t>((s1 - s0) * out_per_sample * dtype_bytes(g_.tensors[y].dtype));
    v.ub_address = place_[storage(y)].offset;
    emit(std::move(v));
  }
}

bool Lowering::fits(int64_t batch) {
  try {
    lower_pass(batch, true);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

void Lowering::lower_pass(int64_t batch, bool dry_run) {
  batch_ = batch;
  ub_ = BufferAllocator(arch_.unified_buffer.capacity_bytes);
  weight_cursor_ = 0;
  const size_t T = g_.tensors.size();
  const int L = static_cast<int>(g_.layers.size());
  place_.assign(T, TensorPlace{});
  dead_.assign(T, false);
  last_use_.assign(T, -1);
  for (size_t t = 0; t < T; ++t) {
    const Tensor& ten = g_.tensors[t];
    TensorPlace& tp = place_[t];
    tp.rows_per_sample = ten.shape.size() == 3 ? ten.shape[0] * ten.shape[1] : 1;
    tp.rows = batch_ * tp.rows_per_sample;
    tp.cols = ten.shape.back();
    tp.bytes = static_cast<uint64_t>(tp.rows * tp.cols * dtype_bytes(ten.dtype));
  }
  for (int li = 0; li < L; ++li) {
    const Layer& layer = g_.layers[li];
    if (graph::is_layout_op(layer.op)) place_[layer.output].alias_of = layer.inputs[0];
  }
  for (int li = 0; li < L; ++li) {
    for (int in : g_.layers[li].inputs) last_use_[storage(in)] = std::max(last_use_[storage(in)], li);
  }
  for (int out : g_.outputs) last_use_[storage(out)] = L;

  // Graph inputs arrive from the host in chunks so the first layer can start early.
  for (int in : g_.inputs) {
    allocate(in, -1);
    if (dry_run) continue;
    const int64_t chunk = samples_per_chunk(in);
    const uint64_t per_sample = place_[in].bytes / static_cast<uint64_t>(batch_);
    for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
      const int64_t s1 = std::min(batch_, s0 + chunk);
      Instruction rh;
      rh.op = Opcode::kReadHost;
      rh.layer = -1;
      rh.bytes = per_sample * static_cast<uint64_t>(s1 - s0);
      rh.ub_address = place_[in].offset + per_sample * static_cast<uint64_t>(s0);
      rh.writes.push_back(region(in, s0, s1));
      p_.host_input_bytes += rh.bytes;
      emit(std::move(rh));
    }
  }

  for (int li = 0; li < L; ++li) {
    const Layer& layer = g_.layers[li];
    allocate(layer.output, li);
    if (!dry_run) {
      if (graph::is_matrix_op(layer.op)) {
        lower_matrix(li);
      } else {
        lower_vector(li);
      }
    }
    // Free tensors whose last reader was this layer.
    for (size_t t = 0; t < T; ++t) {
      if (last_use_[t] == li && place_[t].allocated && place_[t].alias_of < 0 && !dead_[t]) {
        ub_.release(place_[t].offset);
        dead_[t] = true;
      }
    }
  }
  p_.ub_peak_bytes = std::max(p_.ub_peak_bytes, ub_.peak());
  if (dry_run) return;

  for (int out : g_.outputs) {
    const int64_t chunk = samples_per_chunk(out);
    const uint64_t per_sample = place_[out].bytes / static_cast<uint64_t>(batch_);
    for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
      const int64_t s1 = std::min(batch_, s0 + chunk);
      Instruction wh;
      wh.op = Opcode::kWriteHost;
      wh.layer = -1;
      wh.bytes = per_sample * static_cast<uint64_t>(s1 - s0);
      wh.ub_address = place_[storage(out)].offset + per_sample * static_cast<uint64_t>(s0);
      wh.reads.push_back(region(out, s0, s1));
      p_.host_output_bytes += wh.bytes;
      emit(std::move(wh), false);
    }
  }
  prev_place_ = place_;
}

Program Lowering::run() {
  p_.workload = g_.name;
  p_.arch = arch_.name;
  p_.batch = total_batch_;

  uint64_t unique_weight_bytes = 0;
  for (const auto& layer : g_.layers) unique_weight_bytes += static_cast<uint64_t>(layer.weight_count() * dtype_bytes(layer.weight_dtype));
  if (unique_weight_bytes > arch_.weight_memory.capacity_bytes) {
    throw InputError(g_.source + ": workload '" + g_.name + "' has " + std::to_string(unique_weight_bytes) +
                     " bytes of weights, more than weight_memory.capacity of '" + arch_.name + "' (" +
                     std::to_string(arch_.weight_memory.capacity_bytes) + " bytes)");
  }

  for (const auto& layer : g_.layers) {
    LayerInfo info;
    info.name = layer.name;
    info.op = std::string(graph::op_name(layer.op));
    info.output_shape = graph::shape_text(g_.tensors[layer.output].shape);
    p_.layers.push_back(info);
  }

  // When the whole batch does not fit the unified buffer, run the graph on the
  // largest sub-batch that does, pass after pass (weights are fetched again per
  // pass). A single sample that does not fit is an error.
  int64_t sub_batch = total_batch_;
  if (!fits(total_batch_)) {
    lower_pass(1, true);  // throws the error naming the layer if one sample does not fit
    int64_t lo = 1, hi = total_batch_;  // fits(lo), !fits(hi)
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    sub_batch = lo;
  }
  p_.ub_peak_bytes = 0;
  p_.sub_batch = sub_batch;
  for (int64_t done = 0; done < total_batch_; done += sub_batch) {
    lower_pass(std::min(sub_batch, total_batch_ - done), false);
  }

  // Merge weight reads into the body: before every instruction, the reads of the
  // next `depth` tiles not yet consumed are issued, so the FIFO prefetches up to
  // its depth ahead, across layer boundaries, even while the in-order controller
  // waits on an activate; more would only stall the fetcher, never deadlock.
  const size_t depth = static_cast<size_t>(arch_.weight_fifo.depth_tiles);
  size_t next_read = 0, consumed = 0;
  p_.instructions.reserve(body_.size() + weight_reads_.size() + 1);
  for (auto& in : body_) {
    while (next_read < weight_reads_.size() && next_read < consumed + depth) {
      p_.weight_bytes_read += weight_reads_[next_read].bytes;
      p_.instructions.push_back(weight_reads_[next_read++]);
    }
    if (in.op == Opcode::kMatmul) consumed += static_cast<size_t>(in.weight_tiles);
    p_.instructions.push_back(std::move(in));
  }
  Instruction halt;
  halt.op = Opcode::kHalt;
  p_.instructions.push_back(halt);
  return std::move(p_);
}

}  // namespace

Program compile(const Graph& graph, const ArchConfig& arch, const CompileOptions& options) {
  const int64_t batch = options.batch > 0 ? options.batch : graph.default_batch;
  return Lowering(graph, arch, batch).run();
}

}  // namespace tessera::compiler
