#pragma once
// Private to the compiler: the lowering of one graph onto one architecture, shared by the
// files of sim/compiler/ (memory plan, GEMM tiler, matrix / recurrent / vector lowering,
// host transfers and spills, row tiling, weight prefetch, the emitting pass).
#include <algorithm>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/array/matmul_cost.h"
#include "sim/compiler/compiler.h"
#include "sim/compiler/pass_templates.h"

namespace tessera::graph {
struct OpDef;
}

namespace tessera::compiler::detail {

using graph::Graph;
using graph::Layer;
using graph::OpKind;
using graph::Tensor;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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

// The most instructions one program may have, expanded: a bound on time, not memory (the
// compact program and the simulator hold no per-instruction state: issue 19). The
// simulator runs about a million instructions per second, so 2^28 is minutes.
constexpr size_t kMaxInstructions = size_t{1} << 28;
// The most instruction templates the compact program may store, for programs whose
// instructions do not fold into repeats: a template with its share of the program's and
// the compiler's bookkeeping costs about 850 bytes to 1.5 kB (measured: 3.5 GB at 2^22;
// `tessera compile` peak just under 2^20: 1.29 GB for CNN1 on tpu-v1, 1.58 GB for BERT-base
// on edge-npu-32, docs/limits.md), so about 1-1.5 GB. The largest shipped cases store under
// 70,000; a batch in passes adds a pass's templates per pass and is refused after its first
// passes when it would reach the bound (pass_templates.h).
constexpr size_t kMaxStoredInstructions = size_t{1} << 20;

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
  // Regions of dead or evicted tensors whose bytes this one overwrites (indices into the
  // program's SharedRegions::table), and the program's shared list of them once looked up.
  std::vector<uint32_t> reused;
  const isa::SharedRegionList* reused_list = nullptr;
};

// Bytes a tensor gave up (it died or was evicted to host memory): whoever is placed
// over them next must wait for the old contents' readers.
struct Vacated {
  Region region;
  uint32_t id = 0;  // region's index in the program's SharedRegions::table
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// How a row-tiled layer reads one input for a band of its output rows (within a sample).
enum class RowMap {
  kWhole,     // every row of the sample (broadcast operands, layouts that do not map rows)
  kSame,      // the same rows (row-local ops: element-wise, fc, ops along the last axis)
  kConvBand,  // the input lines under the output lines' windows (conv, pooling), halo included
  kResizeBand,  // resize of an image: the input lines the output lines interpolate from
};

// Output head `flat` (over the output's leading axes) -> the operand's head index under broadcasting.
int64_t head_index(int64_t flat, const graph::Shape& lead_y, const graph::Shape& lead);

// Implicit im2col: the input channels [first, second) within a group of cin_g that the K
// tile [k0, k1) of kernel positions x channels reads.
std::pair<int64_t, int64_t> im2col_channels(int64_t k0, int64_t k1, int64_t cin_g);

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

class Lowering;

// A part of a tensor that moves between a core's scratchpad and device memory (split layers
// on several cores): its region, bytes, scratchpad address, and the layer it is charged to.
struct CorePart {
  Region region;
  uint64_t bytes = 0;
  uint64_t ub_address = 0;
  int layer = -1;
};

// GEMM tiling (gemm_tiler.cpp): one GemmJob into read_weights / matmul / activate tiles for
// the dataflow, the tiles round-robin over the matrix units of the active cores. The
// Lowering owns one: which unit and accumulator half take the next tile carry over from
// layer to layer.
class GemmTiler {
 public:
  explicit GemmTiler(Lowering& l) : l_(l) {}
  GemmTiler(const GemmTiler&) = delete;
  GemmTiler& operator=(const GemmTiler&) = delete;
  void emit(const GemmJob& job);
  array::GemmTile max_tile() const;
  double planned_instructions(int64_t M, int64_t K, int64_t N) const;  // at most, for an M x K x N GEMM
  void check_mac_mode(const Layer& layer) const;
  bool emitting() const { return in_gemm_; }  // its tiles are split work

 private:
  Lowering& l_;
  struct OutTile {  // an output tile of a wave: its rows and columns, its slot and accumulator half
    int64_t m0, m1, n0, n1;
    int64_t slot;
    Region acc;
  };
  struct CoreCopies {  // one job's copies between cores (several cores only)
    bool several_cores = false;
    bool operands_in_device_memory = false;
  };
  void load_panels(const GemmJob& job, const std::vector<OutTile>& wave);
  void store_results(std::vector<std::vector<CorePart>>& results);
  std::vector<int> slot_half_;  // per slot: the accumulator half its next tile fills
  int64_t next_slot_ = 0;       // the slot the next tile goes to
  bool in_gemm_ = false;        // emit is emitting
};

class Lowering {
  // Its collaborators, one per family of the lowering (their classes are below).
  friend class GemmTiler;
  friend class MatrixLowering;
  friend class VectorLowering;
  friend class Spiller;
  friend class RowTiler;

 public:
  Lowering(const Graph& g, const ArchConfig& arch, int64_t batch, bool compact = true,
           size_t max_stored_templates = kMaxStoredInstructions)
      : g_(g), arch_(arch), total_batch_(batch), batch_(batch), ub_(arch.unified_buffer.capacity_bytes),
        max_stored_templates_(max_stored_templates) {
    p_.instructions.set_compact(compact);
  }

  Program run();
  // The samples of one pass: the whole batch when it fits the unified buffer, else the most
  // that do (1 with spills).
  int64_t plan_sub_batch();

 private:
  int storage(int t) const { return place_[t].alias_of >= 0 ? storage(place_[t].alias_of) : t; }
  // Region of tensor `t` covering samples [s0, s1) and columns [c0, c1) of its own layout.
  Region region(int t, int64_t s0, int64_t s1, int64_t c0 = 0, int64_t c1 = -1) const;
  Region rows_region(int t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const;
  void allocate(int t, int layer_index);
  void vacate(int t);
  [[noreturn]] void too_many_instructions(int layer) const;
  [[noreturn]] void too_many_stored_instructions(int layer) const;
  void check_projected_templates(const PassTemplates& passes, int64_t sub_batch) const;
  std::string where_at(int layer) const;
  std::string batch_text() const;
  int add_scratch(int li, int64_t rows, int64_t cols, int64_t rows_per_sample, Dtype dtype, bool allocate_now = true);
  void allocate_scratch(int li, bool allocate_now = true);
  void emit(Instruction in, bool writes_tensor_storage = true);
  int64_t element_bytes(int buffer) const;
  int64_t samples_per_chunk(int t) const;
  uint64_t tensor_bytes(int t, int64_t samples) const;

  GemmTiler gemm_{*this};  // gemm_tiler.cpp: GEMMs into tiles, round-robin over the matrix units
  // Lays out and lowers the whole graph for `batch` samples.
  void lower_pass(int64_t batch);

  // The memory plan: sizes and lifetimes of a pass, and whether its allocations fit.
  struct Shortfall {          // an allocation the unified buffer cannot hold
    int layer = -1;           // -1: the graph inputs read before the first layer
    int tensor = -1;          // -1 or a scratch id: the layer's working buffers
    uint64_t bytes = 0;
    uint64_t live_bytes = 0;  // allocated when it was asked for
  };
  struct WorkingBuffer {
    int64_t rows = 0, cols = 0, rows_per_sample = 1;
    Dtype dtype = Dtype::kInt8;
  };
  void lay_out(int64_t batch);
  std::optional<Shortfall> first_shortfall(int64_t batch);
  std::string does_not_fit_message(const Shortfall& s) const;
  std::vector<WorkingBuffer> working_buffers(int li) const;

  const Graph& g_;
  const ArchConfig& arch_;
  int64_t total_batch_;
  int64_t batch_;  // samples in the current pass
  BufferAllocator ub_;
  size_t max_stored_templates_;
  // Templates stored when the current pass started and after each of its layers (the
  // projection's message names the layer where the bound would be reached).
  size_t pass_start_templates_ = 0;
  std::vector<size_t> layer_end_templates_;
  std::vector<TensorPlace> place_;       // graph tensors, then scratch buffers of the pass
  std::vector<int> last_use_;
  std::vector<std::vector<int>> dying_;  // per layer: graph tensors whose last use it is, in id order
  std::vector<bool> dead_;
  std::vector<std::vector<int>> scratch_;  // per layer: scratch buffer ids (into place_)
  std::vector<std::vector<int>> inputs_at_;   // per layer (and after the last): graph inputs read then
  std::vector<std::vector<int>> outputs_at_;  // per layer (and after the last): graph outputs written then
  Program p_;
  // The body (instructions without read_weights) and the weight reads, merged into the
  // program as they are emitted (weight_prefetch.cpp): only the instructions whose place
  // relative to reads not yet emitted is still open wait here; the program folds repeats
  // as they arrive, so the compiler never holds the expanded program (issue 19).
  std::deque<Instruction> body_;
  size_t body_base_ = 0;  // body index of body_.front()
  size_t body_emitted() const { return body_base_ + body_.size(); }
  struct WeightRead {
    Instruction in;
    size_t earliest_body = 0;  // a UB-sourced read may not move above its layer's first instruction
  };
  // Per matrix unit (slot: core x array.count + unit), as each has its own weight FIFO.
  struct FifoReads {
    std::deque<WeightRead> pending;
    size_t base = 0;      // read index of pending.front()
    size_t consumed = 0;  // FIFO tiles the merged matmuls of this unit consume
  };
  std::vector<FifoReads> fifo_reads_ = std::vector<FifoReads>(1);
  size_t reads_emitted() const {
    size_t n = 0;
    for (const auto& f : fifo_reads_) n += f.base + f.pending.size();
    return n;
  }
  FifoReads& fifo_of(const Instruction& in);
  void add_weight_read(Instruction in, size_t earliest_body);
  void merge_weight_reads(bool final);
  size_t layer_body_start_ = 0;
  // The chip template (DESIGN.md §4, docs/architecture.md "Work split"): a GEMM's output
  // tiles go round-robin to the matrix units of the cores a program runs on (slots: core
  // major), each with its own pair of accumulator halves; transfers and vector layers run on
  // core 0; on a chip of several cores a layer's tiles are bracketed by syncs (barriers).
  int64_t slots() const { return arch_.active_matrix_units(); }
  // The scratchpad bytes a program plans with: one core's. Each core has its own scratchpad
  // (VMEM) of unified_buffer.capacity; the plan is one layout that every active core keeps at
  // the same offsets (docs/architecture.md "Work split"), so a tensor a core's units read is
  // allocated in that core's scratchpad and no core holds more than one core's capacity.
  uint64_t scratchpad_bytes() const { return arch_.unified_buffer.capacity_bytes; }
  // "the unified buffer of 'x' (N bytes)", or on several active cores "the scratchpad of each
  // core of 'x' (N bytes per core, 2 cores)", for the messages that say what does not fit.
  std::string scratchpad_text() const;
  int64_t next_dma_engine_ = 0;  // device DMA engines take transfers round-robin
  // Split layers on several cores (docs/architecture.md "Work split"): a core's scratchpad is
  // filled only by its own DMA from device memory, so another core's operand panels and results
  // cross device memory. A part of a tensor (its region, bytes, scratchpad address).
  std::vector<CorePart> pending_gathers_;  // results other cores wrote to device memory: core 0 reads them at the next sync
  std::unordered_map<int, std::vector<CorePart>> core0_parts_;  // per buffer: a split result's tiles core 0 made
  std::vector<char> in_device_memory_;     // per graph tensor: device memory holds all of it
  std::unordered_map<int, Region> device_copy_;  // per buffer: the part last read from device memory, unchanged since
  // Per core (index: core): the operand panels it holds in its scratchpad, by buffer, until the
  // buffer is written again or gives up its bytes.
  std::vector<std::unordered_map<int, std::vector<Region>>> held_panels_;
  bool holds_panel(int64_t core, const Region& r) const;
  void forget_panels(int buffer);
  bool gathering_ = false;                 // emitting pending_gathers_ (no ordering of their own)
  // `a` grown by `b` when together they are one block of the same buffer (b right below or
  // beside a), as one DMA moves them.
  static bool extend(CorePart& a, const CorePart& b);
  uint64_t region_bytes(const Region& r) const;
  uint64_t region_address(const Region& r) const;  // its first byte's scratchpad address (listings)
  void emit_core_copy(Opcode op, int64_t core, int layer, const CorePart& part);
  void copy_to_device_memory(int layer, const Region& whole);  // core 0, before a split layer reads it on other cores
  void gather_results();
  bool write_split_output(int out);
  // Since the last sync: serial work (core 0: transfers, vector layers) and split work (GEMM
  // tiles on every core, of layer split_layer_). A sync goes after split work, between the
  // tiles of two layers, and before split work that reads what core 0 wrote to device memory:
  // only what one core ran is ordered by its own controller.
  bool serial_since_sync_ = false;
  bool split_since_sync_ = false;
  bool device_written_since_sync_ = false;  // core 0 wrote to device memory (a dma_write) since the last sync
  int split_layer_ = -1;
  void order_across_cores(bool split, int layer);
  void sync_cores();
  uint64_t weight_cursor_ = 0;
  // Graph inputs are normally all read from the host before the first layer. When even one
  // sample does not fit that way (e.g. a decoder step's per-layer KV cache), each input is
  // read just before its first consumer instead.
  bool lazy_inputs_ = false;
  using ChunkFn = std::function<void(const Region& region, uint64_t bytes, uint64_t ub_address)>;
  void for_each_chunk(int t, uint64_t ub_base, const ChunkFn& move) const;
  void emit_host_io(Opcode op, int layer, bool spill, const Region& region, uint64_t bytes, uint64_t ub_address);
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

  // Hazard regions that cannot change the schedule (docs/reliability.md, D6). The
  // controller skips hazards between instructions of the same unit, so the region of a
  // vacated buffer d in the writes of a vector-unit instruction orders it only against
  // instructions of other units that touch d. When no instruction of another unit has
  // touched d (in any pass), d is dead (no later access by that id), and no later
  // instruction of another unit can carry d's region (the last pass, no spills, inputs
  // read up front: only the vector unit writes tensor storage from now on), the region
  // is dropped and its entry with it; otherwise it is kept, exactly as before.
  std::vector<char> touched_off_vector_;   // per UB buffer id: a region of it in a non-vector instruction
  bool last_pass_ = false;
  // Dead buffers whose region a vector-unit instruction has carried since they died, in a
  // program of one pass (only_pass_): every instruction of another unit that touched them has
  // finished before that carrier was dispatched, so their regions are inert from then on even
  // though a matmul, weight read or host transfer touched them (a chain of matrix layers).
  std::vector<char> settled_;
  std::vector<uint32_t> extra_;  // emit()'s scratch: the hazard regions an instruction inherits
  // The program's shared tails, each distinct region and each distinct list stored once
  // (issue 19): the index of a region in the table, and the lists by a hash of their ids.
  struct RegionKeyHash {
    size_t operator()(const Region& r) const;
  };
  std::unordered_map<Region, uint32_t, RegionKeyHash> hazard_ids_;
  std::unordered_map<uint64_t, std::vector<const isa::SharedRegionList*>> shared_lists_;
  Vacated vacated_entry(int t);
  const isa::SharedRegionList* shared_list(const std::vector<uint32_t>& ids);
  const isa::SharedRegionList* reused_list(int t);
  bool hazards_may_be_inert() const { return !(spill_ || lazy_inputs_ || !last_pass_); }
  bool only_pass_ = false;
  // Samples the rows of this pass's graph-tensor regions start at: 0 in the first pass and every
  // other one after it, a full pass's samples in the rest. A tensor's regions name it, not its
  // bytes; a later pass lays it out over other bytes, and without the shift its accesses would
  // wait for the previous pass's accesses of the same tensor (a leftover pass of one GPT-J
  // decode sequence waited for its V read before any of its K tiles, 15.1 us against 8.3 us
  // alone). The bytes the two layouts share are ordered by the placement's reused regions
  // (prev_vacated_), as for any other tensor placed over them.
  int64_t pass_row_shift_samples_ = 0;
  // What this pass adds to the rows of buffer t's hazard regions: a graph tensor's shift in its
  // rows; 0 for scratch buffers (row tiles' slots, recurrent working buffers).
  int64_t row_shift(int t) const {
    return static_cast<size_t>(t) < g_.tensors.size() ? pass_row_shift_samples_ * place_[static_cast<size_t>(t)].rows_per_sample : 0;
  }
  void settle(int buffer);
  void note_units(const Instruction& in);
  void note_buffer_off_vector(int buffer);
  bool inert_hazard(int buffer) const;
  void host_transfer(Opcode op, int t, int li, const Region& region, uint64_t bytes, uint64_t ub_address);
  void lower_layer(int li);
};

// Matrix layers on the array (lower_matrix.cpp, lower_recurrent.cpp): fc, conv2d and matmul
// as GemmJobs, LSTM and GRU step by step; the weights they reserve and the LayerInfo facts.
class MatrixLowering {
 public:
  explicit MatrixLowering(Lowering& l) : l_(l) {}
  void lower_matrix(int li);
  void lower_recurrent(int li);
  uint64_t reserve_weights(const Layer& layer);
  GemmJob weight_gemm(int li, int64_t m, uint64_t weights_base, int64_t g) const;
  GemmJob ub_gemm(int li, int64_t m) const;
  void account_gemm(int li, int64_t m, int64_t k, int64_t n, int64_t groups, int64_t weights, Dtype a_dtype,
                    Dtype b_dtype);

 private:
  void lower_fc(int li);
  void lower_conv(int li);
  void lower_matmul(int li);

  Lowering& l_;
};

// Layers on the vector unit (lower_vector.cpp), grouped convolutions that run there included.
class VectorLowering {
 public:
  explicit VectorLowering(Lowering& l) : l_(l) {}
  void lower_vector(int li);
  // `op`: the OpDef whose listing name and vector class the instructions carry.
  void emit_vector_by_samples(int li, const graph::OpDef& op, const std::vector<int>& inputs, int y,
                              int64_t elements_per_sample, int64_t element_bytes = 1);
  void lower_grouped_conv_on_vector(int li);
  bool grouped_conv_on_vector(const Layer& layer) const;
  int64_t vector_work_per_output(const Layer& layer) const;

 private:
  Lowering& l_;
};

// Spills (spill.cpp), only when one sample does not fit the unified buffer otherwise: the
// Lowering's pinned_ and readers_ say what the current layer holds and who reads what next.
class Spiller {
 public:
  explicit Spiller(Lowering& l) : l_(l) {}
  void lower_with_spills(int li);
  void make_room(int li, std::vector<int> needs);
  void evict(int t, int li);
  uint64_t working_set_bytes(int li) const;

 private:
  int next_use(int t, int li) const;
  int pick_victim(int li) const;
  void reload(int t, int li);

  Lowering& l_;
};

// A layer whose own working set does not fit runs in tiles of rows streamed through host
// memory (row_tiling.cpp): one RowTiler per such layer, in steps. It chooses which rows are
// tiled and how each input's rows map to them, which tensors stream and the tile size, places
// the tile buffers, then emits each tile (its transfers and its matrix or vector work).
class RowTiler {
 public:
  RowTiler(Lowering& l, int li);
  void run();

 private:
  struct Tile {
    int64_t s = 0;         // the sample
    int64_t r0 = 0, r1 = 0;  // its rows [r0, r1) (the output's, or a reduction's input's)
    size_t k = 0;          // the tile buffer it uses
  };
  void classify();
  void choose_row_maps();
  RowMap row_map(int input) const;
  // Rows [r0, r1) of one sample's output need these rows of input `input`.
  std::pair<int64_t, int64_t> input_rows(RowMap map, int input, int64_t r0, int64_t r1) const;
  std::pair<int64_t, int64_t> band(int i, int64_t r0, int64_t r1) const;  // input i's rows for tile rows [r0, r1)
  uint64_t row_bytes(int t) const;
  int64_t max_band(int i, int64_t R) const;  // input i's most rows in one tile of R rows
  uint64_t tile_bytes(int64_t R, int64_t slots) const;
  int64_t largest_tile(int64_t slots) const;
  void stream_first(size_t n);  // the n biggest candidates stream
  void search_tiles();          // R_ and what streams, with the tile buffers slots_ gives
  void choose_tiles();
  void place_buffers();
  void emit_tiles();
  void emit_tile(const Tile& t);
  Region in_region(const Tile& t, int i, int64_t a, int64_t b, int64_t c0, int64_t c1) const;
  Region out_region(const Tile& t, int64_t a, int64_t b, int64_t c0, int64_t c1) const;
  uint64_t out_address(const Tile& t, int64_t a, int64_t c0) const;
  void emit_matmul(const Tile& t);
  void emit_weight_gemms(const Tile& t);
  void emit_vector(const Tile& t);
  void account();  // the LayerInfo facts

  Lowering& l_;
  const Graph& g_;
  std::vector<TensorPlace>& place_;
  const int li_;
  const Layer& layer_;
  const int y_;
  const int n_in_;
  const uint64_t capacity_;
  std::string head_;  // "workload ... does not fit ...: layer ...", for messages
  bool vector_conv_ = false, reduction_ = false, gathers_ = false, by_output_rows_ = false;
  std::vector<RowMap> maps_;  // per input
  int64_t rows_total_ = 0;    // rows being tiled, per sample
  std::vector<std::pair<uint64_t, int>> candidates_;  // bytes, input (-1: the output), biggest first
  std::vector<char> streamed_;  // per input
  bool out_streamed_ = false;
  // A matmul whose B (an activation) does not fit beside one tile's rows: B stays in device
  // memory and the weight fetchers read its tiles from there, as they read weights (every
  // tile of output rows reads B again).
  bool b_from_memory_ = false;
  uint64_t b_base_ = 0;  // B's device-memory address
  int64_t R_ = 0, slots_ = 2, acc_half_ = 1;
  std::vector<std::vector<int>> in_slot_;  // per streamed input: its tile buffers
  std::vector<int> out_slot_;
  int64_t y_bytes_ = 0, y_cols_ = 0, rps_y_ = 0, work_per_output_ = 0;
  uint64_t weight_base_ = 0;
  std::vector<std::pair<int64_t, int64_t>> bands_;  // per input: its rows in the current tile
  int64_t tiles_ = 0;
};

}  // namespace tessera::compiler::detail
