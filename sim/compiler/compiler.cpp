#include "sim/compiler/compiler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "models/array/matmul_cost.h"
#include "sim/common/error.h"
#include "sim/graph/ops/registry.h"

namespace tessera::compiler {
namespace {

using graph::Graph;
using graph::Layer;
using graph::OpKind;
using graph::Tensor;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The ISA's activate function for a layer's fused activation.
ActivationFn activation_fn(graph::Activation a) {
  switch (a) {
    case graph::Activation::kNone: return ActivationFn::kNone;
    case graph::Activation::kRelu: return ActivationFn::kRelu;
    case graph::Activation::kSigmoid: return ActivationFn::kSigmoid;
    case graph::Activation::kTanh: return ActivationFn::kTanh;
    case graph::Activation::kRelu6: return ActivationFn::kRelu6;
  }
  return ActivationFn::kNone;
}

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

// The most instructions one program may have (at about 700 bytes each in the compiler,
// plus the simulator's per-instruction state: about 3 GB).
constexpr size_t kMaxInstructions = size_t{1} << 22;

struct TensorPlace {
  int64_t rows = 0;  // batch x spatial positions
  int64_t cols = 0;  // features / channels
  int64_t rows_per_sample = 1;
  uint64_t bytes = 0;
  int alias_of = -1;  // flatten/reshape: shares the source's storage
  uint64_t offset = 0;
  bool allocated = false;       // resident in the unified buffer now
  bool on_host = false;         // a valid copy is in host memory (graph inputs; spilled or streamed tensors)
  bool loaded = false;          // graph inputs: read from the host at least once
  int64_t element_bytes = 0;    // scratch buffers (graph tensors: their dtype)
  std::vector<Region> reused;  // regions of dead or evicted tensors whose bytes this one overwrites
};

// Bytes a tensor gave up (it died or was evicted to host memory): whoever is placed
// over them next must wait for the old contents' readers.
struct Vacated {
  Region region;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// How a row-tiled layer reads one input for a band of its output rows (within a sample).
enum class RowMap {
  kWhole,     // every row of the sample (broadcast operands, layouts that do not map rows)
  kSame,      // the same rows (row-local ops: element-wise, fc, ops along the last axis)
  kConvBand,  // the input lines under the output lines' windows (conv, pooling), halo included
};



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

// One GEMM C[M x N] = A[M x K] * B[K x N] for the tiler, with callbacks that name the
// unified-buffer regions each tile touches.
struct GemmJob {
  int li = -1;
  int64_t M = 0, K = 0, N = 0;
  Dtype a_dtype = Dtype::kInt8, b_dtype = Dtype::kInt8, y_dtype = Dtype::kInt8;
  graph::Activation activation = graph::Activation::kNone;
  bool b_from_ub = false;          // B is an activation in the unified buffer
  uint64_t weight_base = 0;        // weight-memory address of B (row-major K x N)
  int64_t weight_row_stride = 0;   // elements between B rows in weight memory (N of the whole layer)
  bool overlap_add = false;        // conv_transpose2d: activates read-modify-write the output
  std::function<Region(int64_t m0, int64_t m1, int64_t k0, int64_t k1)> a_region;
  std::function<Region(int64_t k0, int64_t k1, int64_t n0, int64_t n1)> b_region;  // b_from_ub only
  std::function<Region(int64_t m0, int64_t m1, int64_t n0, int64_t n1)> out_region;
  std::function<uint64_t(int64_t m0, int64_t n0)> out_address;
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
  void vacate(int t);
  [[noreturn]] void too_many_instructions(int layer) const;
  int add_scratch(int li, int64_t rows, int64_t cols, int64_t rows_per_sample, Dtype dtype, bool allocate_now = true);
  void allocate_scratch(int li, bool allocate_now = true);
  void emit(Instruction in, bool writes_tensor_storage = true);
  int64_t element_bytes(int buffer) const;
  int64_t samples_per_chunk(int t) const;
  uint64_t tensor_bytes(int t, int64_t samples) const;

  void emit_gemm(const GemmJob& job);
  array::GemmTile max_gemm_tile() const;
  void lower_matrix(int li);
  void check_mac_mode(const Layer& layer) const;
  void lower_fc(int li);
  void lower_conv(int li);
  void lower_matmul(int li);
  void lower_recurrent(int li);
  void lower_vector(int li);
  void lower_grouped_conv_on_vector(int li);
  bool grouped_conv_on_vector(const Layer& layer) const;
  // Lays out and (unless dry_run) lowers the whole graph for `batch` samples.
  void lower_pass(int64_t batch, bool dry_run);
  bool fits(int64_t batch);

  const Graph& g_;
  const ArchConfig& arch_;
  int64_t total_batch_;
  int64_t batch_;  // samples in the current pass
  BufferAllocator ub_;
  std::vector<TensorPlace> place_;       // graph tensors, then scratch buffers of the pass
  std::vector<int> last_use_;
  std::vector<std::vector<int>> dying_;  // per layer: graph tensors whose last use it is, in id order
  std::vector<bool> dead_;
  std::vector<std::vector<int>> scratch_;  // per layer: scratch buffer ids (into place_)
  Program p_;
  std::vector<Instruction> body_;  // without read_weights; those are merged in at the end
  struct WeightRead {
    Instruction in;
    size_t earliest_body = 0;  // a UB-sourced read may not move above its layer's first instruction
  };
  std::vector<WeightRead> weight_reads_;
  size_t layer_body_start_ = 0;
  int acc_half_ = 0;
  uint64_t weight_cursor_ = 0;
  // Graph inputs are normally all read from the host before the first layer. When even one
  // sample does not fit that way (e.g. a decoder step's per-layer KV cache), each input is
  // read just before its first consumer instead.
  bool lazy_inputs_ = false;
  void read_input(int in);
  void write_output(int out);

  // Spills (only when one sample does not fit the unified buffer otherwise). Before a
  // layer runs, its inputs are made resident (read back from host memory if they were
  // evicted) and room is made for its output by evicting the resident tensor whose next
  // use is furthest away (Belady); a layer whose own working set does not fit runs in
  // row tiles that stream its big tensors through host memory.
  bool spill_ = false;
  std::vector<char> pinned_;               // tensors the current layer reads or writes: not evictable
  std::vector<std::vector<int>> readers_;  // per storage tensor: layers that read it (ascending)
  std::vector<char> output_storage_;       // storage of a graph output: its host copy is the result
  std::vector<Vacated> vacated_;           // this pass
  std::vector<Vacated> prev_vacated_;      // the previous pass's layout: its bytes are overwritten too
  bool dry_run_ = false;                   // a sizing pass: emits nothing, so records no hazards
  int next_use(int t, int li) const;
  int pick_victim(int li) const;
  void evict(int t, int li);
  void reload(int t, int li);
  void host_transfer(Opcode op, int t, int li, const Region& region, uint64_t bytes, uint64_t ub_address);
  void make_room(int li, std::vector<int> needs);
  void lower_layer(int li);
  void lower_with_spills(int li);
  uint64_t working_set_bytes(int li) const;
  RowMap row_map(const Layer& layer, int input) const;
  std::pair<int64_t, int64_t> input_rows(const Layer& layer, RowMap map, int input, int64_t r0, int64_t r1) const;
  void lower_row_tiled(int li);
  void account_layer(int li);
  int64_t vector_work_per_output(const Layer& layer) const;
};

Region Lowering::rows_region(int t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
  const int s = storage(t);
  if (s != t) {
    // An alias (flatten/reshape) covers whole samples of its source, all columns.
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

uint64_t Lowering::tensor_bytes(int t, int64_t samples) const {
  const Tensor& ten = g_.tensors[static_cast<size_t>(t)];
  return static_cast<uint64_t>(samples * graph::shape_elements(ten.shape) * dtype_bytes(ten.dtype));
}

void Lowering::allocate(int t, int layer_index) {
  TensorPlace& tp = place_[t];
  if (tp.alias_of >= 0 || tp.allocated) return;
  auto offset = ub_.allocate(tp.bytes);
  if (!offset) {
    const std::string where = layer_index >= 0 ? "layer '" + g_.layers[layer_index].name + "'" : "its inputs";
    const std::string what = static_cast<size_t>(t) < g_.tensors.size()
                                 ? "tensor '" + g_.tensors[t].name + "'"
                                 : std::string("its working buffers (gates and state)");
    throw InputError(g_.source + ": workload '" + g_.name + "' at batch " + std::to_string(batch_) +
                     " does not fit the unified buffer of '" + arch_.name + "' (" +
                     std::to_string(arch_.unified_buffer.capacity_bytes) + " bytes): " + where + " needs " +
                     std::to_string(tp.bytes) + " more bytes for " + what + " with " +
                     std::to_string(ub_.in_use()) +
                     " bytes live; use a smaller --batch or a larger unified_buffer.capacity");
  }
  tp.offset = *offset;
  tp.allocated = true;
  tp.reused.clear();  // earlier writers of t (a previous residency) have been emitted already
  if (dry_run_) return;  // nothing is emitted: no hazards to record
  // Bytes reused from dead or evicted tensors: writers of t must wait for their readers.
  for (const auto* list : {&vacated_, &prev_vacated_}) {
    for (const Vacated& v : *list) {
      if (list == &vacated_ && v.region.buffer == t) continue;
      if (v.offset < tp.offset + tp.bytes && tp.offset < v.offset + v.bytes) tp.reused.push_back(v.region);
    }
  }
}

// Records t's bytes as given up, for the hazards of whoever is placed over them next.
// Sizing (dry-run) passes emit nothing and record nothing.
void Lowering::vacate(int t) {
  if (dry_run_) return;
  const TensorPlace& tp = place_[t];
  vacated_.push_back(Vacated{Region{Space::kUnifiedBuffer, t, 0, tp.rows, 0, tp.cols}, tp.offset, tp.bytes});
}

int Lowering::add_scratch(int li, int64_t rows, int64_t cols, int64_t rows_per_sample, Dtype dtype, bool allocate_now) {
  TensorPlace tp;
  tp.rows = rows;
  tp.cols = cols;
  tp.rows_per_sample = rows_per_sample;
  tp.bytes = static_cast<uint64_t>(rows * cols * dtype_bytes(dtype));
  tp.element_bytes = dtype_bytes(dtype);
  place_.push_back(tp);
  dead_.push_back(false);
  last_use_.push_back(li);
  pinned_.push_back(0);
  const int id = static_cast<int>(place_.size() - 1);
  if (allocate_now) allocate(id, li);
  scratch_[static_cast<size_t>(li)].push_back(id);
  return id;
}

// Working buffers a layer needs besides its output (live only during the layer).
void Lowering::allocate_scratch(int li, bool allocate_now) {
  const Layer& layer = g_.layers[static_cast<size_t>(li)];
  if (layer.op != OpKind::kLstm && layer.op != OpKind::kGru) return;
  const Dtype dt = g_.tensors[static_cast<size_t>(layer.output)].dtype;
  const int64_t T = layer.gemm_m_per_sample, H = layer.hidden, G = layer.gates(), D = layer.directions;
  add_scratch(li, batch_ * T, D * G * H, T, dt, allocate_now);  // input projections of every step
  for (int64_t d = 0; d < D; ++d) {
    add_scratch(li, batch_, G * H, 1, dt, allocate_now);  // recurrent gate sums of the current step
    add_scratch(li, batch_, H, 1, dt, allocate_now);      // h state
    add_scratch(li, batch_, H, 1, dt, allocate_now);      // lstm: c state; gru: r * h
  }
}

int64_t Lowering::element_bytes(int buffer) const {
  if (static_cast<size_t>(buffer) < g_.tensors.size()) return dtype_bytes(g_.tensors[static_cast<size_t>(buffer)].dtype);
  return place_[static_cast<size_t>(buffer)].element_bytes;
}

void Lowering::too_many_instructions(int layer) const {
  const std::string where = layer >= 0 && static_cast<size_t>(layer) < g_.layers.size()
                                ? "layer '" + g_.layers[static_cast<size_t>(layer)].name + "'"
                                : "its inputs and outputs";
  throw InputError(g_.source + ": workload '" + g_.name + "' at batch " + std::to_string(batch_) + " needs more than " +
                   std::to_string(kMaxInstructions) + " instructions on '" + arch_.name + "' (" +
                   std::to_string(arch_.array.rows) + "x" + std::to_string(arch_.array.cols) +
                   " array), the most one program may have (about 3 GB of compiler and simulator state); reached at " +
                   where + ": use a smaller --batch, smaller layers or a larger array");
}

void Lowering::emit(Instruction in, bool writes_tensor_storage) {
  // Memory grows with the program (and the engine's per-instruction state with it): a
  // workload whose tiling needs more instructions than this is refused with a message
  // instead of running the machine out of memory (audit D14). emit_gemm checks a whole
  // layer's tiles before emitting any; this catches every other path.
  if (body_.size() + weight_reads_.size() >= kMaxInstructions) too_many_instructions(in.layer);
  if (in.op == Opcode::kVector) {
    // The vector datapath is `lanes` bytes wide: the widest element the instruction
    // reads or writes sets how many lanes one element operation takes.
    for (const auto* list : {&in.reads, &in.writes}) {
      for (const Region& r : *list) {
        if (r.space == Space::kUnifiedBuffer) in.element_bytes = std::max(in.element_bytes, element_bytes(r.buffer));
      }
    }
  }
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

// The largest matmul tile: m within half the accumulator entries (the other half
// drains while this one fills), n within one accumulator row (array.cols partial
// sums), k one array height per step; the dataflow then caps its stationary extents.
array::GemmTile Lowering::max_gemm_tile() const {
  const auto& a = arch_.array;
  const int64_t acc_half = std::max<int64_t>(1, arch_.accumulators.entries / 2);
  return array::dataflow_model(a.dataflow).max_tile(array::ArrayDims{a.rows, a.cols}, {acc_half, a.rows, a.cols});
}

void Lowering::emit_gemm(const GemmJob& job) {
  const array::GemmTile max = max_gemm_tile();
  const int64_t mt = max.m, kt = max.k, nt = max.n;
  const int64_t a_bytes = dtype_bytes(job.a_dtype);
  const int64_t b_bytes = dtype_bytes(job.b_dtype);
  const int64_t y_bytes = dtype_bytes(job.y_dtype);
  LayerInfo& info = p_.layers[static_cast<size_t>(job.li)];
  // Per (m, n) tile: one weight read and one matmul per k tile, then one activate.
  const auto tiles = [](int64_t total, int64_t step) { return static_cast<double>((total + step - 1) / step); };
  const double planned = tiles(job.M, mt) * tiles(job.N, nt) * (2.0 * tiles(job.K, kt) + 1.0);
  if (static_cast<double>(body_.size() + weight_reads_.size()) + planned > static_cast<double>(kMaxInstructions)) {
    too_many_instructions(job.li);
  }
  for (int64_t m0 = 0; m0 < job.M; m0 += mt) {
    const int64_t m1 = std::min(job.M, m0 + mt);
    for (int64_t n0 = 0; n0 < job.N; n0 += nt) {
      const int64_t n1 = std::min(job.N, n0 + nt);
      const int half = acc_half_;
      acc_half_ ^= 1;
      const Region acc{Space::kAccumulators, half, 0, m1 - m0, 0, n1 - n0};
      for (int64_t k0 = 0; k0 < job.K; k0 += kt) {
        const int64_t k1 = std::min(job.K, k0 + kt);
        const uint64_t tile_bytes = static_cast<uint64_t>((k1 - k0) * (n1 - n0) * b_bytes);
        Instruction rw;
        rw.op = Opcode::kReadWeights;
        rw.layer = job.li;
        if (job.b_from_ub) {
          rw.weight_source = WeightSource::kUnifiedBuffer;
          rw.bytes = 0;
          rw.ub_read_bytes = tile_bytes;
          rw.reads.push_back(job.b_region(k0, k1, n0, n1));
          weight_reads_.push_back({rw, layer_body_start_});
        } else {
          rw.bytes = tile_bytes;
          rw.weight_address = job.weight_base + static_cast<uint64_t>((k0 * job.weight_row_stride + n0) * b_bytes);
          info.weight_bytes += rw.bytes;
          weight_reads_.push_back({rw, 0});
        }

        Instruction mm;
        mm.op = Opcode::kMatmul;
        mm.layer = job.li;
        mm.tile = array::GemmTile{m1 - m0, k1 - k0, n1 - n0};
        mm.a_dtype = job.a_dtype;
        mm.b_dtype = job.b_dtype;
        mm.accumulate = k0 > 0;
        mm.weight_tiles = 1;
        mm.ub_read_bytes = static_cast<uint64_t>((m1 - m0) * (k1 - k0) * a_bytes) + (job.b_from_ub ? tile_bytes : 0);
        mm.reads.push_back(job.a_region(m0, m1, k0, k1));
        mm.writes.push_back(acc);
        emit(std::move(mm), false);
      }
      Instruction act;
      act.op = Opcode::kActivate;
      act.layer = job.li;
      act.rows = m1 - m0;
      act.cols = n1 - n0;
      act.function = job.overlap_add ? ActivationFn::kNone : activation_fn(job.activation);
      act.reads.push_back(acc);
      const Region out = job.out_region(m0, m1, n0, n1);
      if (job.overlap_add) act.reads.push_back(out);
      act.writes.push_back(out);
      act.ub_write_bytes = static_cast<uint64_t>(act.rows * act.cols * y_bytes);
      if (job.overlap_add) act.ub_read_bytes = act.ub_write_bytes;  // read-modify-write of the overlap
      act.ub_address = job.out_address(m0, n0);
      emit(std::move(act));
    }
  }
}

void Lowering::lower_matrix(int li) {
  const Layer& layer = g_.layers[li];
  LayerInfo& info = p_.layers[li];
  info.mapping = "array";
  check_mac_mode(layer);
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

void Lowering::check_mac_mode(const Layer& layer) const {
  const Dtype a_dtype = g_.tensors[layer.inputs[0]].dtype;
  if (!arch_.array.find_mode(a_dtype, layer.weight_dtype)) {
    std::string modes;
    for (const auto& m : arch_.array.mac_modes) {
      modes += (modes.empty() ? "" : ", ") + std::string(dtype_name(m.a)) + " x " + std::string(dtype_name(m.b));
    }
    throw InputError(g_.source + ": layer '" + layer.name + "' multiplies " + std::string(dtype_name(a_dtype)) +
                     " activations by " + std::string(dtype_name(layer.weight_dtype)) + " weights, but '" +
                     arch_.name + "' has no such entry in array.mac_modes (it has: " + modes + ")");
  }
}

// fc over the last axis; rows = batch x the leading axes.
void Lowering::lower_fc(int li) {
  const Layer& layer = g_.layers[li];
  LayerInfo& info = p_.layers[li];
  const int x = layer.inputs[0];
  const int y = layer.output;
  const Tensor& xt = g_.tensors[x];
  const int64_t M = batch_ * layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n;
  const int64_t y_bytes = dtype_bytes(g_.tensors[y].dtype);
  GemmJob job;
  job.li = li;
  job.M = M, job.K = K, job.N = N;
  job.a_dtype = xt.dtype;
  job.b_dtype = layer.weight_dtype;
  job.y_dtype = g_.tensors[y].dtype;
  job.activation = layer.activation;
  job.weight_base = weight_cursor_;
  job.weight_row_stride = N;
  weight_cursor_ += static_cast<uint64_t>(K * N * dtype_bytes(layer.weight_dtype));
  job.a_region = [&](int64_t m0, int64_t m1, int64_t k0, int64_t k1) { return rows_region(x, m0, m1, k0, k1); };
  job.out_region = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) { return rows_region(y, m0, m1, n0, n1); };
  job.out_address = [&](int64_t m0, int64_t n0) {
    return place_[y].offset + static_cast<uint64_t>((m0 * place_[y].cols + n0) * y_bytes);
  };
  emit_gemm(job);
  info.gemm_m += M;
  info.gemm_k = K;
  info.gemm_n = N;
  info.macs += M * K * N;
  info.weights = K * N;
  info.a_dtype = xt.dtype;
  info.b_dtype = layer.weight_dtype;
}

// conv2d (implicit im2col; groups run one after another on the array) and
// conv_transpose2d (input pixels x (kernel x filters), overlap-added into the output).
void Lowering::lower_conv(int li) {
  const Layer& layer = g_.layers[li];
  const int x = layer.inputs[0];
  const int y = layer.output;
  const Tensor& xt = g_.tensors[x];
  const bool transposed = layer.op == OpKind::kConvTranspose2d;
  const int64_t G = layer.gemm_groups;
  const int64_t M = batch_ * layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n;
  const int64_t in_channels = place_[x].cols;
  const int64_t cin_g = in_channels / G;
  const int64_t cout_g = layer.out_features / G;
  const int64_t rows_per_sample = layer.gemm_m_per_sample;  // conv: output rows; transposed: input rows
  const int64_t y_bytes = dtype_bytes(g_.tensors[y].dtype);
  LayerInfo& info = p_.layers[li];
  const uint64_t layer_weight_base = weight_cursor_;
  weight_cursor_ += static_cast<uint64_t>(G * K * N * dtype_bytes(layer.weight_dtype));

  const int64_t acc_half = std::max<int64_t>(1, arch_.accumulators.entries / 2);
  // Groups share the M chunks: each chunk of input rows runs every group before the next.
  const int64_t chunk = G > 1 ? std::max<int64_t>(acc_half, 1) : M;
  for (int64_t c0 = 0; c0 < M; c0 += chunk) {
    const int64_t c1 = std::min(M, c0 + chunk);
    for (int64_t g = 0; g < G; ++g) {
      GemmJob job;
      job.li = li;
      job.M = c1 - c0, job.K = K, job.N = N;
      job.a_dtype = xt.dtype;
      job.b_dtype = layer.weight_dtype;
      job.y_dtype = g_.tensors[y].dtype;
      job.activation = layer.activation;
      job.weight_base = layer_weight_base + static_cast<uint64_t>(g * K * N * dtype_bytes(layer.weight_dtype));
      job.weight_row_stride = N;
      job.overlap_add = transposed;
      const int64_t ch_base = g * cin_g;
      job.a_region = [&, c0, ch_base](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
        m0 += c0, m1 += c0;
        if (transposed) return rows_region(x, m0, m1, ch_base + k0, ch_base + k1);
        // Implicit im2col: a K tile covers kernel positions x input channels.
        const int64_t s0 = m0 / rows_per_sample, s1 = ceil_div(m1, rows_per_sample);
        int64_t lo = 0, hi = cin_g;
        if (k1 - k0 < cin_g && k0 % cin_g < (k1 - 1) % cin_g + 1) lo = k0 % cin_g, hi = (k1 - 1) % cin_g + 1;
        return region(x, s0, s1, ch_base + lo, ch_base + hi);
      };
      const int64_t out_base = g * cout_g;
      job.out_region = [&, c0, out_base](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
        m0 += c0, m1 += c0;
        if (transposed) {
          // The products of these input pixels land around them: the samples' whole output, this group's columns.
          const int64_t s0 = m0 / rows_per_sample, s1 = ceil_div(m1, rows_per_sample);
          return region(y, s0, s1, out_base, out_base + cout_g);
        }
        return rows_region(y, m0, m1, out_base + n0, out_base + n1);
      };
      job.out_address = [&, c0, out_base](int64_t m0, int64_t n0) {
        if (transposed) return place_[y].offset + static_cast<uint64_t>(out_base * y_bytes);
        return place_[y].offset + static_cast<uint64_t>(((m0 + c0) * place_[y].cols + out_base + n0) * y_bytes);
      };
      emit_gemm(job);
    }
  }
  if (transposed && layer.activation != graph::Activation::kNone) {
    // The nonlinearity can only run once every overlap has been added: one more pass.
    const int64_t per_chunk = samples_per_chunk(y);
    for (int64_t s0 = 0; s0 < batch_; s0 += per_chunk) {
      const int64_t s1 = std::min(batch_, s0 + per_chunk);
      Instruction v;
      v.op = Opcode::kVector;
      v.layer = li;
      const OpKind fn = layer.activation == graph::Activation::kSigmoid ? OpKind::kSigmoid
                        : layer.activation == graph::Activation::kTanh  ? OpKind::kTanh
                        : layer.activation == graph::Activation::kRelu6 ? OpKind::kClip
                                                                        : OpKind::kRelu;
      v.vector_function = graph::op_def(fn).listing_name();
      v.elements = (s1 - s0) * graph::shape_elements(g_.tensors[y].shape);
      v.reads.push_back(region(y, s0, s1));
      v.writes.push_back(region(y, s0, s1));
      v.ub_read_bytes = v.ub_write_bytes = tensor_bytes(y, s1 - s0);
      v.ub_address = place_[y].offset;
      emit(std::move(v));
    }
  }
  info.gemm_m += M * G;
  info.gemm_k = K;
  info.gemm_n = N;
  info.groups = G;
  info.macs += G * M * K * N;
  info.weights = G * K * N;
  info.a_dtype = xt.dtype;
  info.b_dtype = layer.weight_dtype;
}

// Activation x activation (attention): for every sample and head, B is loaded into the
// array from the unified buffer as if it were a weight tile.
void Lowering::lower_matmul(int li) {
  const Layer& layer = g_.layers[li];
  const int a = layer.inputs[0], b = layer.inputs[1], y = layer.output;
  const auto& as = g_.tensors[a].shape;
  const auto& bs = g_.tensors[b].shape;
  const auto& ys = g_.tensors[y].shape;
  const int64_t M = layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n;
  // Leading (head) axes: output index -> A and B group index under broadcasting.
  const graph::Shape lead_y(ys.begin(), ys.end() - 2);
  const graph::Shape lead_a(as.begin(), as.end() - 2), lead_b(bs.begin(), bs.end() - 2);
  auto group_index = [&](int64_t flat, const graph::Shape& lead) { return head_index(flat, lead_y, lead); };
  const int64_t rows_a = place_[a].rows_per_sample, rows_b = place_[b].rows_per_sample;
  const int64_t rows_y = place_[y].rows_per_sample;
  const int64_t y_bytes = dtype_bytes(g_.tensors[y].dtype);
  const int64_t G = layer.gemm_groups;
  LayerInfo& info = p_.layers[li];
  info.mapping = "array_ub";
  for (int64_t s = 0; s < batch_; ++s) {
    for (int64_t h = 0; h < G; ++h) {
      const int64_t ga = group_index(h, lead_a), gb = group_index(h, lead_b);
      const int64_t a_row0 = s * rows_a + ga * M, b_row0 = s * rows_b + gb * K, y_row0 = s * rows_y + h * M;
      GemmJob job;
      job.li = li;
      job.M = M, job.K = K, job.N = N;
      job.a_dtype = g_.tensors[a].dtype;
      job.b_dtype = g_.tensors[b].dtype;
      job.y_dtype = g_.tensors[y].dtype;
      job.activation = layer.activation;
      job.b_from_ub = true;
      job.a_region = [&, a_row0](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
        return rows_region(a, a_row0 + m0, a_row0 + m1, k0, k1);
      };
      job.b_region = [&, b_row0](int64_t k0, int64_t k1, int64_t n0, int64_t n1) {
        return rows_region(b, b_row0 + k0, b_row0 + k1, n0, n1);
      };
      job.out_region = [&, y_row0](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
        return rows_region(y, y_row0 + m0, y_row0 + m1, n0, n1);
      };
      job.out_address = [&, y_row0](int64_t m0, int64_t n0) {
        return place_[storage(y)].offset + static_cast<uint64_t>(((y_row0 + m0) * place_[y].cols + n0) * y_bytes);
      };
      emit_gemm(job);
    }
  }
  info.gemm_m += batch_ * G * M;
  info.gemm_k = K;
  info.gemm_n = N;
  info.groups = G;
  info.macs += batch_ * G * M * K * N;
  info.weights = 0;
  info.a_dtype = g_.tensors[a].dtype;
  info.b_dtype = g_.tensors[b].dtype;
}

// LSTM / GRU: one GEMM projects the inputs of every step at once; then, step by step,
// the recurrent matmul on h(t-1), its activate into the gate buffer, and one vector
// instruction for the cell. Directions interleave so that one direction's matmul can
// overlap the other's cell. The recurrent weights are fetched again every step.
void Lowering::lower_recurrent(int li) {
  const Layer& layer = g_.layers[li];
  const bool lstm = layer.op == OpKind::kLstm;
  const int x = layer.inputs[0], y = layer.output;
  const Tensor& xt = g_.tensors[x];
  const Dtype dt = g_.tensors[y].dtype;
  const int64_t T = layer.gemm_m_per_sample, I = layer.gemm_k, H = layer.hidden, Gt = layer.gates(), D = layer.directions;
  const int64_t wb = dtype_bytes(layer.weight_dtype), y_bytes = dtype_bytes(dt);
  const auto& scratch = scratch_[static_cast<size_t>(li)];
  const int xg = scratch[0];
  auto hg = [&](int64_t d) { return scratch[static_cast<size_t>(1 + 3 * d)]; };
  auto hs = [&](int64_t d) { return scratch[static_cast<size_t>(2 + 3 * d)]; };
  auto cs = [&](int64_t d) { return scratch[static_cast<size_t>(3 + 3 * d)]; };
  const int h0 = layer.inputs.size() > 1 ? layer.inputs[1] : -1;
  const int c0_in = lstm && layer.inputs.size() > 2 ? layer.inputs[2] : -1;
  LayerInfo& info = p_.layers[li];

  // Weight memory: per direction W (I x G*H) then R (H x G*H).
  std::vector<uint64_t> w_addr(static_cast<size_t>(D)), r_addr(static_cast<size_t>(D));
  for (int64_t d = 0; d < D; ++d) {
    w_addr[static_cast<size_t>(d)] = weight_cursor_;
    weight_cursor_ += static_cast<uint64_t>(I * Gt * H * wb);
    r_addr[static_cast<size_t>(d)] = weight_cursor_;
    weight_cursor_ += static_cast<uint64_t>(H * Gt * H * wb);
  }

  // 1. Input projections of all steps.
  for (int64_t d = 0; d < D; ++d) {
    GemmJob job;
    job.li = li;
    job.M = batch_ * T, job.K = I, job.N = Gt * H;
    job.a_dtype = xt.dtype;
    job.b_dtype = layer.weight_dtype;
    job.y_dtype = dt;
    job.weight_base = w_addr[static_cast<size_t>(d)];
    job.weight_row_stride = Gt * H;
    const int64_t col0 = d * Gt * H;
    job.a_region = [&](int64_t m0, int64_t m1, int64_t k0, int64_t k1) { return rows_region(x, m0, m1, k0, k1); };
    job.out_region = [&, col0](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
      return rows_region(xg, m0, m1, col0 + n0, col0 + n1);
    };
    job.out_address = [&, col0](int64_t m0, int64_t n0) {
      return place_[xg].offset + static_cast<uint64_t>((m0 * place_[xg].cols + col0 + n0) * y_bytes);
    };
    emit_gemm(job);
  }

  // 2. The recurrence.
  auto recurrent_gemm = [&](int64_t d, int src, int64_t n_begin, int64_t n_end, bool from_initial) {
    GemmJob job;
    job.li = li;
    job.M = batch_, job.K = H, job.N = n_end - n_begin;
    job.a_dtype = dt;
    job.b_dtype = layer.weight_dtype;
    job.y_dtype = dt;
    job.weight_base = r_addr[static_cast<size_t>(d)] + static_cast<uint64_t>(n_begin * wb);
    job.weight_row_stride = Gt * H;
    job.a_region = [&, src, from_initial](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
      // The initial state input is [directions, hidden] per sample: its whole samples.
      return from_initial ? region(src, m0, m1) : rows_region(src, m0, m1, k0, k1);
    };
    const int out = hg(d);
    job.out_region = [&, out, n_begin](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
      return rows_region(out, m0, m1, n_begin + n0, n_begin + n1);
    };
    job.out_address = [&, out, n_begin](int64_t m0, int64_t n0) {
      return place_[out].offset + static_cast<uint64_t>((m0 * place_[out].cols + n_begin + n0) * y_bytes);
    };
    emit_gemm(job);
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
        v.elements = batch_ * H * 2;
        v.reads.push_back(rows_region(hg(d), 0, batch_, 0, 2 * H));
        v.reads.push_back(initial ? region(h0, 0, batch_) : rows_region(hs(d), 0, batch_, 0, H));
        v.writes.push_back(rows_region(cs(d), 0, batch_, 0, H));
        v.ub_read_bytes = static_cast<uint64_t>(batch_ * 3 * H * y_bytes);
        v.ub_write_bytes = static_cast<uint64_t>(batch_ * H * y_bytes);
        v.ub_address = place_[cs(d)].offset;
        emit(std::move(v));
        recurrent_gemm(d, cs(d), 2 * H, 3 * H, false);
      } else {
        recurrent_gemm(d, src, 0, Gt * H, initial);
      }
      Instruction cell;
      cell.op = Opcode::kVector;
      cell.layer = li;
      cell.vector_function = graph::op_def(layer.op).listing_name();  // lstm_cell / gru_cell
      cell.elements = batch_ * H * cell_work;
      // Gate pre-activations of this step (the projection buffer, all samples) and the recurrent sums.
      cell.reads.push_back(rows_region(xg, 0, batch_ * T, d * Gt * H, (d + 1) * Gt * H));
      cell.reads.push_back(rows_region(hg(d), 0, batch_, 0, Gt * H));
      if (lstm) {
        if (t == 0 && c0_in >= 0) cell.reads.push_back(region(c0_in, 0, batch_));
        else cell.reads.push_back(rows_region(cs(d), 0, batch_, 0, H));
        cell.writes.push_back(rows_region(cs(d), 0, batch_, 0, H));
      } else if (initial) {
        cell.reads.push_back(region(h0, 0, batch_));
      }
      cell.writes.push_back(rows_region(hs(d), 0, batch_, 0, H));
      // h(t) also lands in the output sequence: row (step, direction) of every sample.
      cell.writes.push_back(region(y, 0, batch_));
      cell.ub_read_bytes = static_cast<uint64_t>(batch_ * (2 * Gt * H + (lstm ? H : 0)) * y_bytes);
      cell.ub_write_bytes = static_cast<uint64_t>(batch_ * (lstm ? 3 : 2) * H * y_bytes);
      cell.ub_address = place_[y].offset + static_cast<uint64_t>((step * D + d) * H * y_bytes);
      emit(std::move(cell));
    }
  }
  info.gemm_m += batch_ * T * D;
  info.gemm_k = I + H;
  info.gemm_n = Gt * H;
  info.groups = D;
  info.macs += batch_ * T * D * (I + H) * Gt * H;
  info.weights = layer.weight_count();
  info.a_dtype = xt.dtype;
  info.b_dtype = layer.weight_dtype;
}

// A grouped (e.g. depthwise) conv runs either group by group on the array or as
// multiply-accumulates on the vector unit; the estimate of each picks the faster.
bool Lowering::grouped_conv_on_vector(const Layer& layer) const {
  if (layer.op != OpKind::kConv2d || layer.gemm_groups <= 1) return false;
  const auto& a = arch_.array;
  const array::ArrayDims dims{a.rows, a.cols};
  const int64_t M = batch_ * layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n, G = layer.gemm_groups;
  const array::GemmTile max = max_gemm_tile();
  const MacMode* mode = a.find_mode(g_.tensors[layer.inputs[0]].dtype, layer.weight_dtype);
  const double rate = mode ? mode->rate : 1.0;
  // Array: one group's tiles through the array's own pipeline model (fill, drain and
  // double buffering per dataflow), paced by the MAC mode and the UB read port; the
  // activates run on the vector unit alongside. Every group is alike.
  array::ArrayPipeline pipe(a.dataflow, dims, a.double_buffered);
  const int64_t a_bytes = dtype_bytes(g_.tensors[layer.inputs[0]].dtype);
  double activate_cycles = 0;
  for (int64_t m0 = 0; m0 < M; m0 += max.m) {
    const int64_t m = std::min(max.m, M - m0);
    for (int64_t n0 = 0; n0 < N; n0 += max.n) {
      const int64_t n = std::min(max.n, N - n0);
      for (int64_t k0 = 0; k0 < K; k0 += max.k) {
        const int64_t k = std::min(max.k, K - k0);
        const array::GemmTile tile{m, k, n};
        const auto t = array::tile_timing(a.dataflow, dims, tile);
        pipe.issue(tile, 0, 0, array::matmul_stream_cycles(t.stream_cycles, rate, m * k * a_bytes,
                                                            arch_.unified_buffer.read_bytes_per_cycle));
      }
      activate_cycles += static_cast<double>(ceil_div(m * n, arch_.vector_unit.lanes) + arch_.vector_unit.pipeline_latency_cycles);
    }
  }
  double array_cycles = static_cast<double>(pipe.last_done());
  array_cycles = std::max(array_cycles, activate_cycles) * static_cast<double>(G);
  // Vector unit: the MACs on its lanes, or the unified-buffer traffic if that is slower.
  const int64_t in_bytes = batch_ * graph::shape_elements(g_.tensors[layer.inputs[0]].shape) * a_bytes;
  const int64_t out_bytes = batch_ * graph::shape_elements(g_.tensors[layer.output].shape) * dtype_bytes(g_.tensors[layer.output].dtype);
  const int64_t chunks = ceil_div(batch_, std::max<int64_t>(1, samples_per_chunk(layer.output)));
  // Each MAC takes as many 8-bit lanes as its widest operand has bytes (as emit() sets element_bytes).
  const int64_t element_bytes = std::max({a_bytes, dtype_bytes(layer.weight_dtype), dtype_bytes(g_.tensors[layer.output].dtype)});
  const double vector_cycles = static_cast<double>(
      std::max({ceil_div(G * M * K * N * element_bytes, arch_.vector_unit.lanes), ceil_div(in_bytes, arch_.unified_buffer.read_bytes_per_cycle),
                ceil_div(out_bytes, arch_.unified_buffer.write_bytes_per_cycle)}) +
      chunks * arch_.vector_unit.pipeline_latency_cycles);
  return vector_cycles < array_cycles;
}

void Lowering::lower_grouped_conv_on_vector(int li) {
  const Layer& layer = g_.layers[li];
  const int x = layer.inputs[0], y = layer.output;
  LayerInfo& info = p_.layers[li];
  info.mapping = "vector";
  const int64_t macs_per_sample = layer.macs_per_sample();
  const int64_t chunk = samples_per_chunk(y);
  for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
    const int64_t s1 = std::min(batch_, s0 + chunk);
    Instruction v;
    v.op = Opcode::kVector;
    v.layer = li;
    v.vector_function = graph::op_def(OpKind::kConv2d).listing_name();  // grouped_conv
    v.elements = (s1 - s0) * macs_per_sample;
    v.element_bytes = dtype_bytes(layer.weight_dtype);  // the weights are an operand too (emit widens to the tensors')
    v.reads.push_back(region(x, s0, s1));
    v.writes.push_back(region(y, s0, s1));
    v.ub_read_bytes = tensor_bytes(x, s1 - s0);
    v.ub_write_bytes = tensor_bytes(y, s1 - s0);
    v.ub_address = place_[y].offset;
    emit(std::move(v));
  }
  // The weights (kernel x channels, a few KiB) are not modelled as weight-memory traffic here.
  info.gemm_m += batch_ * layer.gemm_m_per_sample * layer.gemm_groups;
  info.gemm_k = layer.gemm_k;
  info.gemm_n = layer.gemm_n;
  info.groups = layer.gemm_groups;
  info.macs += batch_ * macs_per_sample;
  info.weights = layer.weight_count();
  info.a_dtype = g_.tensors[x].dtype;
  info.b_dtype = layer.weight_dtype;
}

// Element operations per output element of a vector layer (the vector unit does one
// element operation per lane per cycle): from the op's OpDef.
int64_t Lowering::vector_work_per_output(const Layer& layer) const {
  const graph::OpDef& def = graph::op_def(layer.op);
  return def.work_per_output ? def.work_per_output(g_, layer) : 1;
}

void Lowering::lower_vector(int li) {
  const Layer& layer = g_.layers[li];
  const int y = layer.output;
  LayerInfo& info = p_.layers[li];
  if (graph::is_layout_op(layer.op)) {  // flatten / reshape: an alias, nothing moves
    info.mapping = "alias";
    return;
  }
  info.mapping = "vector";
  info.a_dtype = info.b_dtype = g_.tensors[y].dtype;
  const std::string_view vop = graph::op_def(layer.op).listing_name();
  const int64_t out_per_sample = graph::shape_elements(g_.tensors[y].shape);
  const int64_t work_per_output = vector_work_per_output(layer);
  const int64_t chunk = samples_per_chunk(y);
  for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
    const int64_t s1 = std::min(batch_, s0 + chunk);
    Instruction v;
    v.op = Opcode::kVector;
    v.layer = li;
    v.vector_function = vop;
    v.elements = (s1 - s0) * out_per_sample * work_per_output;
    for (int in : layer.inputs) {
      v.reads.push_back(region(in, s0, s1));
      v.ub_read_bytes += tensor_bytes(in, s1 - s0);
    }
    v.writes.push_back(region(y, s0, s1));
    v.ub_write_bytes = tensor_bytes(y, s1 - s0);
    v.ub_address = place_[storage(y)].offset;
    emit(std::move(v));
  }
}

void Lowering::read_input(int in) {
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

bool Lowering::fits(int64_t batch) {
  try {
    lower_pass(batch, true);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

// ---------------------------------------------------------------- spills and row tiles

int Lowering::next_use(int t, int li) const {
  if (static_cast<size_t>(t) < readers_.size()) {
    const auto& r = readers_[static_cast<size_t>(t)];
    auto it = std::upper_bound(r.begin(), r.end(), li);
    if (it != r.end()) return *it;
  }
  return static_cast<int>(g_.layers.size());  // only the final write to the host is left
}

// Belady: the resident tensor needed again furthest in the future; at a tie one that
// host memory already holds (evicting it moves nothing), then the bigger one.
int Lowering::pick_victim(int li) const {
  int best = -1;
  std::tuple<int, int, uint64_t> best_key{-1, -1, 0};
  for (size_t t = 0; t < place_.size(); ++t) {
    const TensorPlace& tp = place_[t];
    if (!tp.allocated || tp.alias_of >= 0 || dead_[t] || pinned_[t]) continue;
    const std::tuple<int, int, uint64_t> key{next_use(static_cast<int>(t), li), tp.on_host ? 1 : 0, tp.bytes};
    if (best < 0 || key > best_key) best = static_cast<int>(t), best_key = key;
  }
  return best;
}

void Lowering::host_transfer(Opcode op, int t, int li, const Region& region, uint64_t bytes, uint64_t ub_address) {
  const bool graph_tensor = static_cast<size_t>(t) < g_.tensors.size();
  const bool to_host = op == Opcode::kWriteHost;
  Instruction in;
  in.op = op;
  in.layer = li < static_cast<int>(p_.layers.size()) ? li : -1;
  in.bytes = bytes;
  in.ub_address = ub_address;
  // A graph output's host copy is the result, and a graph input's first read is the
  // input itself; everything else crosses the link only for want of room: a spill.
  if (to_host) {
    in.spill = !(graph_tensor && output_storage_[static_cast<size_t>(t)]);
  } else {
    in.spill = !(graph_tensor && g_.tensors[static_cast<size_t>(t)].producer < 0 && !place_[t].loaded);
  }
  if (in.spill && in.layer >= 0) {
    LayerInfo& info = p_.layers[static_cast<size_t>(in.layer)];
    (to_host ? info.spill_bytes_out : info.spill_bytes_in) += bytes;
  }
  if (in.spill) {
    (to_host ? p_.spill_bytes_out : p_.spill_bytes_in) += bytes;
  } else {
    (to_host ? p_.host_output_bytes : p_.host_input_bytes) += bytes;
  }
  if (to_host) {
    in.reads.push_back(region);
    emit(std::move(in), false);
  } else {
    in.writes.push_back(region);
    emit(std::move(in));
  }
}

// Evicts a resident tensor: writes it to host memory unless a copy is there already
// (activations do not change once produced), then frees its bytes.
void Lowering::evict(int t, int li) {
  TensorPlace& tp = place_[t];
  if (!tp.on_host) {
    const int64_t chunk = samples_per_chunk(t);
    const uint64_t per_sample = tp.bytes / static_cast<uint64_t>(batch_);
    for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
      const int64_t s1 = std::min(batch_, s0 + chunk);
      host_transfer(Opcode::kWriteHost, t, li, region(t, s0, s1), per_sample * static_cast<uint64_t>(s1 - s0),
                    tp.offset + per_sample * static_cast<uint64_t>(s0));
    }
    tp.on_host = true;
  }
  ub_.release(tp.offset);
  vacate(t);
  tp.allocated = false;
}

// Reads a tensor (just allocated) from host memory: a graph input's first read, or a
// spilled activation coming back before its consumer.
void Lowering::reload(int t, int li) {
  TensorPlace& tp = place_[t];
  if (static_cast<size_t>(t) < g_.tensors.size() && g_.tensors[static_cast<size_t>(t)].producer < 0 && !tp.loaded) {
    read_input(t);
  } else {
    const int64_t chunk = samples_per_chunk(t);
    const uint64_t per_sample = tp.bytes / static_cast<uint64_t>(batch_);
    for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
      const int64_t s1 = std::min(batch_, s0 + chunk);
      host_transfer(Opcode::kReadHost, t, li, region(t, s0, s1), per_sample * static_cast<uint64_t>(s1 - s0),
                    tp.offset + per_sample * static_cast<uint64_t>(s0));
    }
  }
  tp.loaded = true;
}

// Allocates `needs` (in order) for layer li, evicting other tensors until they all fit;
// needs that live in host memory are read back. When nothing else is left to evict and
// the buffer is still too fragmented, the layer's own resident tensors go out and come
// back laid out afresh.
void Lowering::make_room(int li, std::vector<int> needs) {
  for (int t : needs) pinned_[static_cast<size_t>(t)] = 1;
  for (;;) {
    BufferAllocator trial = ub_;
    bool ok = true;
    for (int t : needs) {
      if (!trial.allocate(place_[t].bytes)) {
        ok = false;
        break;
      }
    }
    if (ok) break;
    if (const int v = pick_victim(li); v >= 0) {
      evict(v, li);
      continue;
    }
    int own = -1;
    for (size_t t = 0; t < place_.size(); ++t) {
      const TensorPlace& tp = place_[t];
      if (tp.allocated && tp.alias_of < 0 && !dead_[t] && pinned_[t] && (own < 0 || tp.bytes > place_[own].bytes)) {
        own = static_cast<int>(t);
      }
    }
    if (own < 0) {
      uint64_t need = 0;
      for (int t : needs) need += place_[t].bytes;
      throw InputError(g_.source + ": workload '" + g_.name + "' does not fit the unified buffer of '" + arch_.name +
                       "' (" + std::to_string(arch_.unified_buffer.capacity_bytes) + " bytes): layer '" +
                       g_.layers[static_cast<size_t>(std::min<int>(li, static_cast<int>(g_.layers.size()) - 1))].name +
                       "' needs " + std::to_string(need) + " bytes; use a larger unified_buffer.capacity");
    }
    evict(own, li);
    needs.push_back(own);
  }
  for (int t : needs) {
    allocate(t, std::min<int>(li, static_cast<int>(g_.layers.size()) - 1));
    if (place_[t].on_host) reload(t, li);
  }
}

uint64_t Lowering::working_set_bytes(int li) const {
  const Layer& layer = g_.layers[static_cast<size_t>(li)];
  std::vector<int> seen;
  uint64_t bytes = 0;
  for (int in : layer.inputs) {
    const int s = storage(in);
    if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
    seen.push_back(s);
    bytes += place_[s].bytes;
  }
  bytes += place_[layer.output].bytes;
  for (int sc : scratch_[static_cast<size_t>(li)]) bytes += place_[sc].bytes;
  return bytes;
}

void Lowering::lower_with_spills(int li) {
  const Layer& layer = g_.layers[static_cast<size_t>(li)];
  if (graph::is_layout_op(layer.op)) {  // an alias: nothing moves, nothing needs to be resident
    p_.layers[static_cast<size_t>(li)].mapping = "alias";
    return;
  }
  allocate_scratch(li, false);
  std::vector<int> needs;
  for (int in : layer.inputs) {
    const int s = storage(in);
    pinned_[static_cast<size_t>(s)] = 1;
    if (!place_[s].allocated && std::find(needs.begin(), needs.end(), s) == needs.end()) needs.push_back(s);
  }
  needs.push_back(layer.output);
  for (int sc : scratch_[static_cast<size_t>(li)]) needs.push_back(sc);
  if (working_set_bytes(li) <= arch_.unified_buffer.capacity_bytes) {
    make_room(li, needs);
    lower_layer(li);
  } else {
    lower_row_tiled(li);
  }
  std::fill(pinned_.begin(), pinned_.end(), 0);
}

namespace {
// Row tiling from the op's OpDef: output row r needs only input row r (given the first
// input's rank).
bool row_local_op(const Layer& layer, size_t rank) {
  const graph::OpDef& def = graph::op_def(layer.op);
  return def.row_local ? def.row_local(layer, rank) : def.elementwise;
}
bool reduction_op(OpKind op) { return graph::op_def(op).reduction; }
bool windowed_op(const Layer& layer, const Graph& g) {
  return graph::op_def(layer.op).windowed && g.tensors[static_cast<size_t>(layer.inputs[0])].shape.size() == 3 &&
         g.tensors[static_cast<size_t>(layer.output)].shape.size() == 3;
}
}  // namespace

RowMap Lowering::row_map(const Layer& layer, int input) const {
  const int x = layer.inputs[static_cast<size_t>(input)];
  const int s = storage(x), y = layer.output;
  // Streaming addresses the storage's rows: an alias must keep its source's row layout.
  if (s != x && (place_[s].rows_per_sample != place_[x].rows_per_sample || place_[s].cols != place_[x].cols)) {
    return RowMap::kWhole;
  }
  if (layer.op == OpKind::kFc) return RowMap::kSame;
  if (windowed_op(layer, g_)) return input == 0 ? RowMap::kConvBand : RowMap::kWhole;
  if (layer.op == OpKind::kMatmul) {
    // A's rows are the output's when both have the same heads; B is needed whole.
    const auto& as = g_.tensors[static_cast<size_t>(x)].shape;
    const auto& ys = g_.tensors[static_cast<size_t>(y)].shape;
    const bool same_heads = input == 0 && as.size() == ys.size() && std::equal(as.begin(), as.end() - 2, ys.begin());
    return same_heads ? RowMap::kSame : RowMap::kWhole;
  }
  if (row_local_op(layer, g_.tensors[static_cast<size_t>(x)].shape.size()) &&
      place_[x].rows_per_sample == place_[y].rows_per_sample) {
    return RowMap::kSame;
  }
  return RowMap::kWhole;
}

// Rows [r0, r1) of one sample's output need these rows of input `input`.
std::pair<int64_t, int64_t> Lowering::input_rows(const Layer& layer, RowMap map, int input, int64_t r0, int64_t r1) const {
  const int x = layer.inputs[static_cast<size_t>(input)];
  switch (map) {
    case RowMap::kSame: return {r0, r1};
    case RowMap::kWhole: return {0, place_[x].rows_per_sample};
    case RowMap::kConvBand: {
      const auto& xs = g_.tensors[static_cast<size_t>(x)].shape;
      const auto& ys = g_.tensors[static_cast<size_t>(layer.output)].shape;
      const int64_t IH = xs[0], IW = xs[1], OW = ys[1];
      const int64_t oh0 = r0 / OW, oh1 = (r1 - 1) / OW + 1;
      int64_t ih0 = std::max<int64_t>(0, oh0 * layer.stride_h - layer.pad_top);
      int64_t ih1 = std::min<int64_t>(IH, (oh1 - 1) * layer.stride_h - layer.pad_top + (layer.kernel_h - 1) * layer.dilation_h + 1);
      if (ih1 <= ih0) ih0 = std::min(ih0, IH - 1), ih1 = ih0 + 1;  // a window wholly in the padding
      return {ih0 * IW, ih1 * IW};
    }
  }
  return {0, 0};
}

// A layer whose inputs and output do not fit the unified buffer at once runs in tiles of
// output rows (a reduction: of input rows): the biggest of its tensors stream through
// host memory, each in two tile buffers (the transfer of one tile overlaps the work on
// the other), and the rest stay resident. Tiles are as large as fit.
void Lowering::lower_row_tiled(int li) {
  const Layer& layer = g_.layers[static_cast<size_t>(li)];
  const int y = layer.output;
  const uint64_t capacity = arch_.unified_buffer.capacity_bytes;
  const int n_in = static_cast<int>(layer.inputs.size());
  const bool vector_conv = grouped_conv_on_vector(layer);
  const bool reduction = reduction_op(layer.op) && !row_local_op(layer, g_.tensors[layer.inputs[0]].shape.size());
  const bool by_output_rows =
      !reduction && (layer.op == OpKind::kFc || layer.op == OpKind::kMatmul || windowed_op(layer, g_) ||
                     (!graph::is_matrix_op(layer.op) && row_local_op(layer, g_.tensors[layer.inputs[0]].shape.size())));
  const std::string head = g_.source + ": workload '" + g_.name + "' does not fit the unified buffer of '" +
                           arch_.name + "' (" + std::to_string(capacity) + " bytes): layer '" + layer.name + "' (" +
                           std::string(graph::op_name(layer.op)) + ")";
  if (!reduction && !by_output_rows) {
    throw InputError(head + " needs " + std::to_string(working_set_bytes(li)) +
                     " bytes at once for its inputs and output and cannot run in row tiles (tiled are: fc, conv2d, "
                     "matmul, pooling, reductions and row-wise vector ops); use a larger unified_buffer.capacity");
  }
  if (graph::is_matrix_op(layer.op) && !vector_conv) check_mac_mode(layer);

  std::vector<RowMap> maps(static_cast<size_t>(n_in));
  for (int i = 0; i < n_in; ++i) {
    if (reduction) {
      // The input streams in chunks of its own rows (if they are its storage's rows).
      const int x = layer.inputs[0], xs = storage(x);
      const bool addressable = xs == x || (place_[xs].rows_per_sample == place_[x].rows_per_sample && place_[xs].cols == place_[x].cols);
      maps[i] = i == 0 && addressable ? RowMap::kSame : RowMap::kWhole;
    } else {
      maps[i] = row_map(layer, i);
    }
  }
  // Rows being tiled: the output's (or, for a reduction, the input's) rows of one sample.
  const int64_t rows_total = reduction ? place_[layer.inputs[0]].rows_per_sample : place_[y].rows_per_sample;
  auto band = [&](int i, int64_t r0, int64_t r1) {
    return reduction ? (i == 0 ? std::pair<int64_t, int64_t>{r0, r1} : input_rows(layer, RowMap::kWhole, i, r0, r1))
                     : input_rows(layer, maps[static_cast<size_t>(i)], i, r0, r1);
  };
  auto row_bytes = [&](int t) {
    return static_cast<uint64_t>(place_[t].cols * dtype_bytes(g_.tensors[static_cast<size_t>(t)].dtype));
  };
  auto max_band = [&](int i, int64_t R) {
    int64_t most = 0;
    for (int64_t r0 = 0; r0 < rows_total; r0 += R) {
      const auto [a, b] = band(i, r0, std::min(rows_total, r0 + R));
      most = std::max(most, b - a);
    }
    return most;
  };
  // Tensors to stream, biggest first: index -1 is the output (a reduction keeps its small output).
  std::vector<std::pair<uint64_t, int>> candidates;
  if (by_output_rows) candidates.push_back({place_[y].bytes, -1});
  for (int i = 0; i < n_in; ++i) {
    if (maps[static_cast<size_t>(i)] != RowMap::kWhole) candidates.push_back({place_[storage(layer.inputs[i])].bytes, i});
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<char> streamed(static_cast<size_t>(n_in), 0);
  bool out_streamed = false;
  auto tile_bytes = [&](int64_t R, int64_t slots) {
    uint64_t bytes = out_streamed ? static_cast<uint64_t>(slots * R) * row_bytes(y) : place_[y].bytes;
    std::vector<int> whole;
    for (int i = 0; i < n_in; ++i) {
      const int x = layer.inputs[static_cast<size_t>(i)];
      if (streamed[static_cast<size_t>(i)]) {
        bytes += static_cast<uint64_t>(slots * max_band(i, R)) * row_bytes(storage(x));
      } else if (std::find(whole.begin(), whole.end(), storage(x)) == whole.end()) {
        whole.push_back(storage(x));
        bytes += place_[storage(x)].bytes;
      }
    }
    return bytes;
  };
  auto largest_tile = [&](int64_t slots) -> int64_t {  // 0: not even one row fits
    if (tile_bytes(1, slots) > capacity) return 0;
    if (tile_bytes(rows_total, slots) <= capacity) return rows_total;
    int64_t lo = 1, hi = rows_total;  // fits(lo), !fits(hi)
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (tile_bytes(mid, slots) <= capacity ? lo : hi) = mid;
    }
    return lo;
  };
  const int64_t acc_half = std::max<int64_t>(1, arch_.accumulators.entries / 2);
  const int64_t wanted = std::min(rows_total, acc_half);  // a full accumulator half per tile
  // Stream the fewest tensors that give full-size tiles, else those that give the largest.
  auto stream_first = [&](size_t n) {
    out_streamed = false;
    std::fill(streamed.begin(), streamed.end(), 0);
    for (size_t k = 0; k < n; ++k) {
      if (candidates[k].second < 0) out_streamed = true;
      else streamed[static_cast<size_t>(candidates[k].second)] = 1;
    }
  };
  int64_t R = 0, slots = 2;
  size_t best_n = candidates.size();
  for (size_t n = 1; n <= candidates.size(); ++n) {
    stream_first(n);
    const int64_t r = largest_tile(slots);
    if (r > R) R = r, best_n = n;
    if (R >= wanted) break;
  }
  stream_first(best_n);
  if (R == 0) R = largest_tile(slots = 1);  // single-buffered: transfers no longer overlap the work
  if (R == 0) {
    throw InputError(head + " needs " + std::to_string(tile_bytes(1, 1)) + " bytes for its smallest tile (one " +
                     (reduction ? "input row" : "output row and the input rows it reads") +
                     ", its big tensors streamed through host memory); use a larger unified_buffer.capacity");
  }
  if (graph::is_matrix_op(layer.op) && !vector_conv && R > acc_half) R -= R % acc_half;  // whole accumulator halves

  // Streamed inputs come from host memory: resident ones go there first.
  for (int i = 0; i < n_in; ++i) {
    const int s = storage(layer.inputs[static_cast<size_t>(i)]);
    if (streamed[static_cast<size_t>(i)] && place_[s].allocated) {
      pinned_[static_cast<size_t>(s)] = 0;
      evict(s, li);
    }
  }
  std::vector<int> needs;
  for (int i = 0; i < n_in; ++i) {
    const int s = storage(layer.inputs[static_cast<size_t>(i)]);
    if (streamed[static_cast<size_t>(i)]) continue;
    pinned_[static_cast<size_t>(s)] = 1;
    if (!place_[s].allocated && std::find(needs.begin(), needs.end(), s) == needs.end()) needs.push_back(s);
  }
  if (!out_streamed) needs.push_back(y);
  // Tile buffers: their own regions, so a tile's transfer waits only for the readers of
  // the tile that used the same buffer before it.
  std::vector<std::vector<int>> in_slot(static_cast<size_t>(n_in));
  std::vector<int> out_slot;
  for (int i = 0; i < n_in; ++i) {
    if (!streamed[static_cast<size_t>(i)]) continue;
    const int s = storage(layer.inputs[static_cast<size_t>(i)]);
    const int64_t rows = max_band(i, R);
    for (int64_t k = 0; k < slots; ++k) {
      in_slot[static_cast<size_t>(i)].push_back(add_scratch(li, rows, place_[s].cols, rows, g_.tensors[s].dtype, false));
      needs.push_back(in_slot[static_cast<size_t>(i)].back());
    }
  }
  if (out_streamed) {
    for (int64_t k = 0; k < slots; ++k) {
      out_slot.push_back(add_scratch(li, R, place_[y].cols, R, g_.tensors[y].dtype, false));
      needs.push_back(out_slot.back());
    }
  }
  make_room(li, needs);

  layer_body_start_ = body_.size();
  LayerInfo& info = p_.layers[static_cast<size_t>(li)];
  const Dtype y_dtype = g_.tensors[y].dtype;
  const int64_t y_bytes = dtype_bytes(y_dtype);
  const int64_t y_cols = place_[y].cols;
  const int64_t rps_y = place_[y].rows_per_sample;
  const uint64_t weight_base = weight_cursor_;
  if (graph::is_matrix_op(layer.op) && !vector_conv) {
    weight_cursor_ += static_cast<uint64_t>(layer.gemm_groups * layer.gemm_k * layer.gemm_n * dtype_bytes(layer.weight_dtype));
  }
  const int64_t work_per_output = graph::is_matrix_op(layer.op) ? 0 : vector_work_per_output(layer);
  int64_t tile = 0;
  std::vector<std::pair<int64_t, int64_t>> bands(static_cast<size_t>(n_in));
  for (int64_t s = 0; s < batch_; ++s) {
    for (int64_t r0 = 0; r0 < rows_total; r0 += R, ++tile) {
      const int64_t r1 = std::min(rows_total, r0 + R);
      const auto k = static_cast<size_t>(tile % slots);
      // Stream in this tile's input rows (a window's halo is read again with every tile).
      for (int i = 0; i < n_in; ++i) {
        bands[static_cast<size_t>(i)] = band(i, r0, r1);
        if (!streamed[static_cast<size_t>(i)]) continue;
        const int src = storage(layer.inputs[static_cast<size_t>(i)]);
        const int slot = in_slot[static_cast<size_t>(i)][k];
        const auto [a, b] = bands[static_cast<size_t>(i)];
        host_transfer(Opcode::kReadHost, src, li, Region{Space::kUnifiedBuffer, slot, 0, b - a, 0, place_[slot].cols},
                      static_cast<uint64_t>(b - a) * row_bytes(src), place_[slot].offset);
      }
      // Rows [a, b) of input i within this sample, columns [c0, c1).
      auto in_region = [&, s, k](int i, int64_t a, int64_t b, int64_t c0, int64_t c1) {
        const int x = layer.inputs[static_cast<size_t>(i)];
        if (streamed[static_cast<size_t>(i)]) {
          const int64_t base = bands[static_cast<size_t>(i)].first;
          return Region{Space::kUnifiedBuffer, in_slot[static_cast<size_t>(i)][k], a - base, b - base, c0, c1};
        }
        if (maps[static_cast<size_t>(i)] == RowMap::kWhole && layer.op != OpKind::kMatmul) return region(x, s, s + 1, c0, c1);
        const int64_t rps = place_[x].rows_per_sample;
        return rows_region(x, s * rps + a, s * rps + b, c0, c1);
      };
      auto out_region = [&, s, k, r0](int64_t a, int64_t b, int64_t c0, int64_t c1) {
        if (out_streamed) return Region{Space::kUnifiedBuffer, out_slot[k], a - r0, b - r0, c0, c1};
        return rows_region(y, s * rps_y + a, s * rps_y + b, c0, c1);
      };
      auto out_address = [&, s, k, r0](int64_t a, int64_t c0) {
        const int64_t row = out_streamed ? a - r0 : s * rps_y + a;
        return (out_streamed ? place_[out_slot[k]].offset : place_[storage(y)].offset) +
               static_cast<uint64_t>((row * y_cols + c0) * y_bytes);
      };

      if (layer.op == OpKind::kMatmul) {
        // Heads whose rows fall in this tile; B (K^T or V) stays resident and is loaded per head.
        const int a = layer.inputs[0], b = layer.inputs[1];
        const int64_t M = layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n;
        const auto& ys = g_.tensors[y].shape;
        const auto& bs = g_.tensors[b].shape;
        const graph::Shape lead_y(ys.begin(), ys.end() - 2), lead_b(bs.begin(), bs.end() - 2);
        const int64_t rows_b = place_[b].rows_per_sample;
        for (int64_t h = r0 / M; h * M < r1; ++h) {
          const int64_t m_lo = std::max(r0, h * M) - h * M, m_hi = std::min(r1, (h + 1) * M) - h * M;
          const int64_t gb = head_index(h, lead_y, lead_b);
          const int64_t row0 = h * M + m_lo;  // in A's and the output's rows (same heads) or the output's only
          GemmJob job;
          job.li = li;
          job.M = m_hi - m_lo, job.K = K, job.N = N;
          job.a_dtype = g_.tensors[a].dtype;
          job.b_dtype = g_.tensors[b].dtype;
          job.y_dtype = y_dtype;
          job.activation = layer.activation;
          job.b_from_ub = true;
          const auto& as = g_.tensors[a].shape;
          const int64_t a_row0 = maps[0] == RowMap::kSame ? row0 : head_index(h, lead_y, graph::Shape(as.begin(), as.end() - 2)) * M + m_lo;
          job.a_region = [&, a_row0](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
            return in_region(0, a_row0 + m0, a_row0 + m1, k0, k1);
          };
          job.b_region = [&, s, gb, rows_b, b, K](int64_t k0, int64_t k1, int64_t n0, int64_t n1) {
            return rows_region(b, s * rows_b + gb * K + k0, s * rows_b + gb * K + k1, n0, n1);
          };
          job.out_region = [&, row0](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
            return out_region(row0 + m0, row0 + m1, n0, n1);
          };
          job.out_address = [&, row0](int64_t m0, int64_t n0) { return out_address(row0 + m0, n0); };
          emit_gemm(job);
        }
      } else if (layer.op == OpKind::kFc || (layer.op == OpKind::kConv2d && !vector_conv)) {
        const int64_t G = layer.gemm_groups, K = layer.gemm_k, N = layer.gemm_n;
        const int64_t cin_g = place_[layer.inputs[0]].cols / G, cout_g = layer.out_features / G;
        const bool conv = layer.op == OpKind::kConv2d;
        const int64_t step = conv && G > 1 ? acc_half : r1 - r0;  // groups share accumulator-sized chunks
        for (int64_t c0 = r0; c0 < r1; c0 += step) {
          const int64_t c1 = std::min(r1, c0 + step);
          for (int64_t g = 0; g < (conv ? G : 1); ++g) {
            GemmJob job;
            job.li = li;
            job.M = c1 - c0, job.K = K, job.N = N;
            job.a_dtype = g_.tensors[layer.inputs[0]].dtype;
            job.b_dtype = layer.weight_dtype;
            job.y_dtype = y_dtype;
            job.activation = layer.activation;
            job.weight_base = weight_base + static_cast<uint64_t>(g * K * N * dtype_bytes(layer.weight_dtype));
            job.weight_row_stride = N;
            const int64_t ch_base = g * cin_g, out_base = conv ? g * cout_g : 0;
            job.a_region = [&, c0, ch_base, conv](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
              if (!conv) return in_region(0, c0 + m0, c0 + m1, k0, k1);
              const auto [a, b] = input_rows(layer, maps[0], 0, c0 + m0, c0 + m1);
              int64_t lo = 0, hi = cin_g;  // implicit im2col: a K tile covers kernel positions x input channels
              if (k1 - k0 < cin_g && k0 % cin_g < (k1 - 1) % cin_g + 1) lo = k0 % cin_g, hi = (k1 - 1) % cin_g + 1;
              return in_region(0, a, b, ch_base + lo, ch_base + hi);
            };
            job.out_region = [&, c0, out_base](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
              return out_region(c0 + m0, c0 + m1, out_base + n0, out_base + n1);
            };
            job.out_address = [&, c0, out_base](int64_t m0, int64_t n0) { return out_address(c0 + m0, out_base + n0); };
            emit_gemm(job);
          }
        }
      } else {
        Instruction v;
        v.op = Opcode::kVector;
        v.layer = li;
        v.vector_function = graph::op_def(layer.op).listing_name();
        for (int i = 0; i < n_in; ++i) {
          const int x = layer.inputs[static_cast<size_t>(i)];
          const auto [a, b] = bands[static_cast<size_t>(i)];
          v.reads.push_back(in_region(i, a, b, 0, place_[x].cols));
          v.ub_read_bytes += static_cast<uint64_t>(b - a) * row_bytes(x);
        }
        if (reduction) {
          // Every input element once; the partial result is read back and updated in place.
          v.elements = (r1 - r0) * place_[layer.inputs[0]].cols;
          const Region whole_out = rows_region(y, s * rps_y, (s + 1) * rps_y, 0, y_cols);
          if (r0 > 0) {
            v.reads.push_back(whole_out);
            v.ub_read_bytes += static_cast<uint64_t>(rps_y) * row_bytes(y);
          }
          v.writes.push_back(whole_out);
          v.ub_write_bytes = static_cast<uint64_t>(rps_y) * row_bytes(y);
          v.ub_address = place_[storage(y)].offset;
        } else {
          v.elements = vector_conv ? (r1 - r0) * (layer.macs_per_sample() / rps_y) : (r1 - r0) * y_cols * work_per_output;
          if (vector_conv) v.element_bytes = dtype_bytes(layer.weight_dtype);
          v.writes.push_back(out_region(r0, r1, 0, y_cols));
          v.ub_write_bytes = static_cast<uint64_t>(r1 - r0) * row_bytes(y);
          v.ub_address = out_address(r0, 0);
        }
        emit(std::move(v));
      }
      if (out_streamed) {
        host_transfer(Opcode::kWriteHost, y, li, Region{Space::kUnifiedBuffer, out_slot[k], 0, r1 - r0, 0, y_cols},
                      static_cast<uint64_t>(r1 - r0) * row_bytes(y), place_[out_slot[k]].offset);
      }
    }
  }
  for (int i = 0; i < n_in; ++i) {
    if (streamed[static_cast<size_t>(i)]) place_[storage(layer.inputs[static_cast<size_t>(i)])].loaded = true;
  }
  if (out_streamed) place_[y].on_host = true;  // its rows are in host memory only
  info.row_tiles += tile;
  account_layer(li);
}

// The LayerInfo facts of a row-tiled layer: the same as its untiled lowering's.
void Lowering::account_layer(int li) {
  const Layer& layer = g_.layers[static_cast<size_t>(li)];
  LayerInfo& info = p_.layers[static_cast<size_t>(li)];
  const Dtype x_dtype = g_.tensors[static_cast<size_t>(layer.inputs[0])].dtype;
  if (!graph::is_matrix_op(layer.op)) {
    info.mapping = "vector";
    info.a_dtype = info.b_dtype = g_.tensors[static_cast<size_t>(layer.output)].dtype;
    return;
  }
  const int64_t G = layer.gemm_groups, K = layer.gemm_k, N = layer.gemm_n;
  const int64_t M = batch_ * layer.gemm_m_per_sample;
  if (layer.op == OpKind::kMatmul) {
    info.mapping = "array_ub";
    info.gemm_m += G * M;
    info.gemm_k = K;
    info.gemm_n = N;
    info.groups = G;
    info.macs += G * M * K * N;
    info.weights = 0;
    info.a_dtype = x_dtype;
    info.b_dtype = g_.tensors[static_cast<size_t>(layer.inputs[1])].dtype;
    return;
  }
  info.mapping = grouped_conv_on_vector(layer) ? "vector" : "array";
  info.gemm_m += M * G;
  info.gemm_k = K;
  info.gemm_n = N;
  info.groups = G;
  info.macs += G * M * K * N;
  info.weights = layer.weight_count();
  info.a_dtype = x_dtype;
  info.b_dtype = layer.weight_dtype;
}

void Lowering::lower_pass(int64_t batch, bool dry_run) {
  batch_ = batch;
  dry_run_ = dry_run;
  ub_ = BufferAllocator(arch_.unified_buffer.capacity_bytes);
  weight_cursor_ = 0;
  const size_t T = g_.tensors.size();
  const int L = static_cast<int>(g_.layers.size());
  place_.assign(T, TensorPlace{});
  dead_.assign(T, false);
  last_use_.assign(T, -1);
  pinned_.assign(T, 0);
  vacated_.clear();
  readers_.assign(T, {});
  output_storage_.assign(T, 0);
  scratch_.assign(static_cast<size_t>(L), {});
  for (size_t t = 0; t < T; ++t) {
    const Tensor& ten = g_.tensors[t];
    TensorPlace& tp = place_[t];
    tp.rows_per_sample = graph::shape_elements(ten.shape) / ten.shape.back();
    tp.rows = batch_ * tp.rows_per_sample;
    tp.cols = ten.shape.back();
    tp.bytes = static_cast<uint64_t>(tp.rows * tp.cols * dtype_bytes(ten.dtype));
  }
  for (int in : g_.inputs) place_[static_cast<size_t>(in)].on_host = true;  // the host holds the inputs
  for (int li = 0; li < L; ++li) {
    const Layer& layer = g_.layers[li];
    if (graph::is_layout_op(layer.op)) place_[layer.output].alias_of = layer.inputs[0];
  }
  for (int li = 0; li < L; ++li) {
    for (int in : g_.layers[li].inputs) {
      last_use_[storage(in)] = std::max(last_use_[storage(in)], li);
      auto& r = readers_[static_cast<size_t>(storage(in))];
      if (!graph::is_layout_op(g_.layers[li].op) && (r.empty() || r.back() != li)) r.push_back(li);
    }
  }
  for (int out : g_.outputs) output_storage_[static_cast<size_t>(storage(out))] = 1;
  // Outputs go to the host after the last layer; in streaming mode as soon as they are
  // complete (after their producer and their last reader), which frees their bytes early.
  std::vector<std::vector<int>> outputs_at(static_cast<size_t>(L) + 1);
  for (int out : g_.outputs) {
    const int s = storage(out);
    int done = L;
    if (lazy_inputs_) {
      done = std::max(last_use_[s], g_.tensors[static_cast<size_t>(out)].producer);
      if (done < 0) done = L;
    }
    last_use_[s] = std::max(last_use_[s], done);
    outputs_at[static_cast<size_t>(done)].push_back(out);
  }
  dying_.assign(static_cast<size_t>(L), {});
  for (size_t t = 0; t < T; ++t) {
    if (last_use_[t] >= 0 && last_use_[t] < L) dying_[static_cast<size_t>(last_use_[t])].push_back(static_cast<int>(t));
  }
  auto write_outputs = [&](int at) {
    if (dry_run) return;
    for (int out : outputs_at[static_cast<size_t>(at)]) write_output(out);
  };

  // Graph inputs arrive from the host in chunks so the first layer can start early.
  // With spills, each input is read when a layer first needs it (lower_with_spills).
  std::vector<std::vector<int>> inputs_at(static_cast<size_t>(L) + 1);
  for (int in : g_.inputs) {
    int first = L;
    for (int li = 0; li < L && first == L; ++li) {
      for (int t : g_.layers[li].inputs) {
        if (storage(t) == in) first = li;
      }
    }
    inputs_at[static_cast<size_t>(lazy_inputs_ ? first : 0)].push_back(in);
  }
  auto take_inputs = [&](int li) {
    for (int in : inputs_at[static_cast<size_t>(li)]) {
      if (spill_) {
        if (li < L) continue;  // read by lower_with_spills before its first consumer
        make_room(L, {in});    // an input no layer reads still crosses the link
        continue;
      }
      allocate(in, li < L && lazy_inputs_ ? li : -1);
      place_[in].loaded = true;
      if (!dry_run) read_input(in);
    }
  };
  if (!lazy_inputs_) take_inputs(0);

  for (int li = 0; li < L; ++li) {
    const Layer& layer = g_.layers[li];
    if (lazy_inputs_) take_inputs(li);
    if (spill_) {
      if (dry_run) throw std::logic_error("compiler: spills are planned by real passes only");
      lower_with_spills(li);
    } else {
      allocate(layer.output, li);
      allocate_scratch(li);
      if (!dry_run) lower_layer(li);
    }
    write_outputs(li);
    // Free tensors (and working buffers) whose last reader was this layer, in id order
    // (graph tensors, then the layer's working buffers): only those, not a scan of all.
    auto free_dead = [&](int t) {
      if (last_use_[t] == li && place_[t].alias_of < 0 && !dead_[t]) {
        if (place_[t].allocated) {
          ub_.release(place_[t].offset);
          vacate(t);
          place_[t].allocated = false;
        }
        dead_[t] = true;
      }
    };
    for (int t : dying_[static_cast<size_t>(li)]) free_dead(t);
    for (int t : scratch_[static_cast<size_t>(li)]) free_dead(t);
  }
  if (lazy_inputs_) take_inputs(L);  // inputs no layer reads
  p_.ub_peak_bytes = std::max(p_.ub_peak_bytes, ub_.peak());
  if (dry_run) return;

  write_outputs(L);
  // The next pass overwrites every byte this one used.
  prev_vacated_ = vacated_;
  for (size_t t = 0; t < place_.size(); ++t) {
    const TensorPlace& tp = place_[t];
    if (!tp.allocated || tp.alias_of >= 0) continue;
    prev_vacated_.push_back(
        Vacated{Region{Space::kUnifiedBuffer, static_cast<int32_t>(t), 0, tp.rows, 0, tp.cols}, tp.offset, tp.bytes});
  }
}

void Lowering::lower_layer(int li) {
  const Layer& layer = g_.layers[li];
  layer_body_start_ = body_.size();
  if (grouped_conv_on_vector(layer)) {
    lower_grouped_conv_on_vector(li);
  } else if (graph::is_matrix_op(layer.op)) {
    lower_matrix(li);
  } else {
    lower_vector(li);
  }
}

void Lowering::write_output(int out) {
  // Evicted or streamed by a row-tiled layer: its host copy is the result already.
  if (!place_[storage(out)].allocated && place_[storage(out)].on_host) return;
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

  // The matrix layers' tiles alone, before lowering anything: a program over the
  // instruction bound fails here at once instead of after gigabytes of instructions.
  {
    const int64_t acc_half = std::max<int64_t>(1, arch_.accumulators.entries / 2);
    const int64_t mt = arch_.array.dataflow == array::Dataflow::kWeightStationary ? acc_half
                       : arch_.array.dataflow == array::Dataflow::kOutputStationary
                           ? std::min(arch_.array.rows, acc_half)
                           : std::min(arch_.array.cols, acc_half);
    const auto steps = [](int64_t total, int64_t step) { return std::ceil(static_cast<double>(total) / static_cast<double>(step)); };
    double planned = 0;
    for (size_t li = 0; li < g_.layers.size(); ++li) {
      const Layer& l = g_.layers[li];
      if (!graph::is_matrix_op(l.op) || l.gemm_k <= 0 || l.gemm_n <= 0) continue;
      const double m = static_cast<double>(total_batch_) * static_cast<double>(std::max<int64_t>(1, l.gemm_m_per_sample));
      planned += static_cast<double>(std::max<int64_t>(1, l.gemm_groups)) * std::ceil(m / static_cast<double>(mt)) *
                 steps(l.gemm_n, arch_.array.cols) * (2.0 * steps(l.gemm_k, arch_.array.rows) + 1.0);
      if (planned > static_cast<double>(kMaxInstructions)) too_many_instructions(static_cast<int>(li));
    }
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
  if (!fits(1)) {
    lazy_inputs_ = true;  // inputs up front do not fit even one sample: read each when needed
    // Not even so: spill activations to host memory and tile the layers that need it,
    // one sample per pass (the real pass throws if a layer cannot run even in tiles).
    if (!fits(1)) spill_ = true;
  }
  if (spill_) {
    sub_batch = 1;
  } else if (!fits(total_batch_)) {
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
  // waits on an activate; more would only stall the fetcher, never deadlock. A tile
  // loaded from the unified buffer waits until its layer starts (its producer is an
  // earlier layer), and the FIFO keeps the tiles in order.
  const size_t depth = static_cast<size_t>(arch_.weight_fifo.depth_tiles);
  size_t next_read = 0, consumed = 0;
  p_.instructions.reserve(body_.size() + weight_reads_.size() + 1);
  for (size_t b = 0; b < body_.size(); ++b) {
    auto& in = body_[b];
    while (next_read < weight_reads_.size() && next_read < consumed + depth &&
           weight_reads_[next_read].earliest_body <= b) {
      p_.weight_bytes_read += weight_reads_[next_read].in.bytes;
      p_.instructions.push_back(std::move(weight_reads_[next_read++].in));
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
