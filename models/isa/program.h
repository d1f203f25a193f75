#pragma once
// The accelerator's instruction set: TPU-like CISC instructions the compiler emits and
// the SystemC units execute (DESIGN.md §4). Regions name the on-chip data each
// instruction reads and writes; the controller stalls on overlapping regions.
// A leaf of the model tree: it knows tiles and dtypes, nothing of graphs or reports.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/array/systolic_timing.h"
#include "sim/common/dtype.h"
#include "sim/common/vector_class.h"

namespace tessera::isa {

// kDmaRead / kDmaWrite move a tensor tile between device memory and a core's scratchpad
// (the chip template's `dma`, DESIGN.md §4); kReadHost / kWriteHost cross the host link.
enum class Opcode : uint8_t { kReadHost, kReadWeights, kMatmul, kActivate, kVector, kWriteHost, kSync, kHalt, kDmaRead, kDmaWrite };
std::string_view opcode_name(Opcode op);

enum class Space : uint8_t { kUnifiedBuffer, kAccumulators };

// A rectangle of a 2-D buffer: a tensor in the unified buffer (rows = batch x
// spatial positions, cols = features/channels) or one half of the accumulators.
struct Region {
  Space space = Space::kUnifiedBuffer;
  int32_t buffer = 0;  // tensor id (UB) or accumulator half (0/1)
  int64_t row_begin = 0, row_end = 0;
  int64_t col_begin = 0, col_end = 0;
  bool overlaps(const Region& o) const {
    return space == o.space && buffer == o.buffer && row_begin < o.row_end && o.row_begin < row_end &&
           col_begin < o.col_end && o.col_begin < col_end;
  }
  bool operator==(const Region&) const = default;
};

// A shared tail of region lists: the hazard regions of dead or evicted tensors that every
// tile writing over the same bytes carries (hundreds for a row-tiled layer with spills).
// Stored once per distinct list, as indices into the program's table of such regions (each
// distinct region once), so a list costs 4 bytes a region, not 40 (issue 19: Llama-2-7B at
// 2,048 tokens carries 5 M of them).
struct SharedRegionList {
  const std::vector<Region>* table = nullptr;  // SharedRegions::table
  std::vector<uint32_t> ids;
  size_t size() const { return ids.size(); }
  const Region& operator[](size_t i) const { return (*table)[ids[i]]; }
};

// The regions an instruction reads or writes (issue 19: compact records). Its own regions
// are almost always one, so one is stored inline and only longer lists allocate. After
// them may come a shared, read-only tail (SharedRegionList) that many tiles point at
// instead of copying it. Iteration, size() and indexing see own regions then the tail,
// exactly the list a std::vector would hold. A vector-like subset: push_back, insert at
// the end, const iteration, indexing.
class RegionList {
 public:
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Region;
    using difference_type = std::ptrdiff_t;
    using pointer = const Region*;
    using reference = const Region&;
    const_iterator() = default;
    const_iterator(const RegionList* list, size_t i) : list_(list), i_(i) {}
    reference operator*() const { return (*list_)[i_]; }
    pointer operator->() const { return &(*list_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++i_;
      return old;
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_ && list_ == o.list_; }

   private:
    const RegionList* list_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = const_iterator;

  RegionList() = default;
  RegionList(std::initializer_list<Region> l) {
    for (const Region& r : l) push_back(r);
  }
  RegionList(const RegionList& o) { copy_from(o); }
  RegionList(RegionList&& o) noexcept { steal(o); }
  RegionList& operator=(const RegionList& o) {
    if (this != &o) {
      release();
      copy_from(o);
    }
    return *this;
  }
  RegionList& operator=(RegionList&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  ~RegionList() { release(); }

  // Appends an own region (before any shared tail is attached).
  void push_back(const Region& r) {
    if (tail_ != nullptr) throw std::logic_error("RegionList::push_back after the shared tail");
    if (size_ == capacity_) grow(static_cast<uint32_t>(capacity_) * 2);
    own()[size_++] = r;
  }
  template <typename It>
  void insert(const_iterator pos, It first, It last) {
    if (pos != end()) throw std::logic_error("RegionList::insert: only at the end");
    for (; first != last; ++first) push_back(*first);
  }
  // Attaches a shared tail (storage that outlives this list: Program::shared_regions).
  void set_shared_tail(const SharedRegionList* tail) {
    if (tail_ != nullptr) throw std::logic_error("RegionList::set_shared_tail: a tail is attached already");
    if (tail != nullptr && tail->size() > 0) tail_ = tail, tail_size_ = static_cast<uint32_t>(tail->size());
  }
  uint32_t shared_size() const { return tail_size_; }
  const SharedRegionList* shared_tail() const { return tail_; }
  // The instruction's own regions (without the shared tail), writable: a repeat's strides
  // step them (InstructionStream).
  size_t own_size() const { return size_; }
  Region& own_region(size_t i) { return own()[i]; }
  const Region& own_region(size_t i) const { return own()[i]; }
  size_t size() const { return size_ + static_cast<size_t>(tail_size_); }
  bool empty() const { return size() == 0; }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }
  const Region& operator[](size_t i) const { return i < size_ ? own()[i] : (*tail_)[i - size_]; }
  // The own regions as a plain array, for loops that want one (the controller's overlap
  // test); the tail is reached through shared_tail().
  std::span<const Region> own_regions() const { return {own(), size_}; }
  const Region& front() const { return (*this)[0]; }
  const Region& back() const { return (*this)[size() - 1]; }

 private:
  Region* own() { return capacity_ == 1 ? &inline_ : heap_; }
  const Region* own() const { return capacity_ == 1 ? &inline_ : heap_; }
  void grow(uint32_t cap) {
    if (cap > UINT16_MAX) throw std::length_error("RegionList: more than 65535 own regions");
    Region* heap = new Region[cap];
    std::copy(own(), own() + size_, heap);
    if (capacity_ > 1) delete[] heap_;
    heap_ = heap;
    capacity_ = static_cast<uint16_t>(cap);
  }
  void release() {
    if (capacity_ > 1) delete[] heap_;
    capacity_ = 1;
    size_ = 0;
    inline_ = Region{};
    tail_ = nullptr;
    tail_size_ = 0;
  }
  void copy_from(const RegionList& o) {
    for (uint16_t i = 0; i < o.size_; ++i) push_back(o.own()[i]);
    tail_ = o.tail_;
    tail_size_ = o.tail_size_;
  }
  void steal(RegionList& o) {
    size_ = o.size_;
    capacity_ = o.capacity_;
    tail_ = o.tail_;
    tail_size_ = o.tail_size_;
    if (capacity_ == 1) {
      inline_ = o.inline_;
    } else {
      heap_ = o.heap_;
      o.capacity_ = 1;
      o.inline_ = Region{};
    }
    o.size_ = 0;
    o.tail_ = nullptr;
    o.tail_size_ = 0;
  }
  union {
    Region inline_{};
    Region* heap_;
  };
  uint16_t size_ = 0;
  uint16_t capacity_ = 1;  // 1: the inline region; more: heap_
  uint32_t tail_size_ = 0;
  const SharedRegionList* tail_ = nullptr;
};

// The function an `activate` applies while draining accumulators to the unified buffer.
enum class ActivationFn : uint8_t { kNone, kRelu, kSigmoid, kTanh, kRelu6 };
std::string_view activation_fn_name(ActivationFn f);

// Where a read_weights tile comes from. Weights of fc/conv/lstm layers live in weight
// memory (DRAM). The second operand of an activation x activation matmul (attention's
// K^T and V) is already in the unified buffer: its read_weights moves no weight-memory
// bytes (bytes = 0), names the UB region it loads in `reads` (so the controller waits
// for the producer), and carries the tile size in ub_read_bytes; the consuming matmul
// adds those bytes to its own ub_read_bytes, so the UB read port pays for the load.
// Weights resident in host memory (residency.weights: host) are read by the same weight
// fetcher over the host link (PCIe) instead: kHost, `bytes` and `weight_address` as for
// weight memory (the address is then in host memory).
enum class WeightSource : uint8_t { kWeightMemory, kUnifiedBuffer, kHost };
std::string_view weight_source_name(WeightSource s);

// Fields ordered so the small ones share words (issue 19: compact records; the enums
// are one byte). One record has no heap storage unless a region list holds more than one.
struct Instruction {
  Opcode op = Opcode::kSync;
  WeightSource weight_source = WeightSource::kWeightMemory;  // read_weights
  ActivationFn function = ActivationFn::kNone;  // activate: the function applied
  // read_host / write_host: a spill (an activation evicted to host memory, read back, or
  // streamed through host memory by a row-tiled layer) rather than a graph input/output.
  bool spill = false;
  bool accumulate = false;  // matmul
  // The core that runs it (a chip's cores split a layer's tiles), and within the core the
  // matrix unit of a read_weights / matmul or the DMA engine of a dma_read / dma_write.
  // A sync on a chip of several cores is a barrier: every core's next sync meets it.
  uint8_t core = 0;
  uint8_t unit = 0;
  VectorClass vector_class = VectorClass::kArithmetic;  // vector: the op's OpDef class, which sets its rate
  int32_t layer = -1;  // the compiled workload's layer index (stats and listings), -1 for none
  int32_t weight_tiles = 0;   // matmul: FIFO tiles consumed by this matmul
  Dtype a_dtype = Dtype::kInt8;  // matmul
  Dtype b_dtype = Dtype::kInt8;  // matmul
  RegionList reads;
  RegionList writes;

  uint64_t bytes = 0;       // read_host / write_host / read_weights: bytes moved
  uint64_t ub_address = 0;  // read_host / write_host / activate / vector: destination or source offset (display)
  uint64_t weight_address = 0;  // read_weights: weight-memory (or host-memory) offset; dma_read / dma_write: device-memory offset

  // matmul
  array::GemmTile tile{};
  uint64_t ub_read_bytes = 0;  // matmul / vector: bytes read from the unified buffer
  uint64_t ub_write_bytes = 0; // activate / vector: bytes written to the unified buffer

  // activate: rows x cols accumulator values through the vector unit
  int64_t rows = 0;
  int64_t cols = 0;

  // vector
  // The vector function, as listings and traces name it: the op's OpDef listing name
  // (sim/graph/ops/), or a step of a lowered layer ("lstm_cell", "gru_reset"). The cost is
  // `elements` element operations on the vector unit's lanes plus the unified-buffer
  // bytes the instruction reads and writes. Points to static storage.
  std::string_view vector_function = "add";
  int64_t elements = 0;  // element operations performed
  int64_t element_bytes = 1;  // widest operand: the vector datapath does lanes bytes per cycle

  std::string text() const;  // one line of `tessera compile` output
};

// How the numeric fields of an instruction change from one iteration of a repeat to the
// next (issue 19: the compact program). The fields, in order: layer, weight_tiles, bytes,
// ub_address, weight_address, tile.m, tile.k, tile.n, ub_read_bytes, ub_write_bytes, rows,
// cols, elements, element_bytes, then for each of the first kStridedRegions own regions of
// reads, then of writes: buffer, row_begin, row_end, col_begin, col_end. Everything else
// (opcode, dtypes, flags, the vector function, region spaces, further own regions, the
// shared tail) is the same in every iteration.
struct Stride {
  static constexpr int kScalars = 14;
  static constexpr int kStridedRegions = 2;
  static constexpr int kRegionFields = 5;
  static constexpr int kFields = kScalars + 2 * kStridedRegions * kRegionFields;
  static std::string_view field_name(int f);  // "bytes", "read0.row_begin", ...
  std::array<int64_t, kFields> d{};
  bool operator==(const Stride&) const = default;
  bool zero() const;
};

// Instruction `b` as `a` plus a stride; false when they differ in anything a stride cannot
// express (then `out` is unspecified).
bool stride_between(const Instruction& a, const Instruction& b, Stride& out);
// Adds `times` x `s` to the numeric fields of `in`.
void add_stride(Instruction& in, const Stride& s, uint64_t times);

// The program's instructions in compact form (issue 19): repeated patterns are stored once,
// as a repeat of a body of items (instructions or nested repeats) with a count and, per
// instruction template in the body (depth first), the stride its fields advance by per
// iteration. Instruction i of the expanded program is template + sum over its enclosing
// repeats of (iteration x stride). push_back folds repeats as instructions arrive (the
// compiler never holds the expanded program); readers see the expanded program: size(),
// operator[] (decoded by value) and a forward iterator that decodes on the fly (what it
// refers to is valid until it moves on: copy an instruction to keep it), so nothing indexed
// by instruction number changes. set_compact(false) keeps every instruction as its
// own item (the expanded program, for comparisons).
class InstructionStream {
 public:
  struct Loop;
  struct Item {
    Instruction in;              // the instruction template (when loop is null)
    std::unique_ptr<Loop> loop;  // or a repeat
    uint64_t size = 1;           // instructions it expands to
    uint32_t templates = 1;      // instruction templates in it
    Item() = default;
    explicit Item(Instruction i) : in(std::move(i)) {}
    Item(const Item& o);
    Item& operator=(const Item& o);
    Item(Item&&) noexcept = default;
    Item& operator=(Item&&) noexcept = default;
  };
  struct Loop {
    uint64_t count = 0;
    std::vector<Item> body;
    std::vector<Stride> stride;  // per template of the body, depth first
  };
  // The longest body (in items) a repeat is folded over.
  static constexpr size_t kMaxBody = 24;

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Instruction;
    using difference_type = std::ptrdiff_t;
    using pointer = const Instruction*;
    using reference = const Instruction&;
    const_iterator() = default;
    const_iterator(const InstructionStream* s, size_t top);
    reference operator*() const { return cur_; }
    pointer operator->() const { return &cur_; }
    const_iterator& operator++();
    bool operator==(const const_iterator& o) const { return index_ == o.index_; }
    uint64_t index() const { return index_; }

   private:
    struct Frame {
      const Loop* loop;
      uint64_t iter;
      uint32_t pos;        // body item
      uint32_t templates;  // templates of the body items before pos
    };
    void descend(const Item* item);
    void materialize(const Item& leaf);
    const InstructionStream* s_ = nullptr;
    uint64_t index_ = 0;
    size_t top_ = 0;
    std::vector<Frame> frames_;
    Instruction cur_;
  };
  using iterator = const_iterator;

  void push_back(Instruction in);
  void emplace_back(Instruction in) { push_back(std::move(in)); }
  size_t size() const { return static_cast<size_t>(size_); }
  bool empty() const { return size_ == 0; }
  Instruction operator[](size_t i) const;  // decoded; O(log items)
  Instruction front() const { return (*this)[0]; }
  Instruction back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const;
  std::vector<Instruction> expanded() const;

  // Off: every instruction is its own item from now on (the expanded program).
  void set_compact(bool on) { compact_ = on; }
  const std::vector<Item>& items() const { return items_; }
  uint64_t item_start(size_t item) const { return starts_[item]; }
  size_t templates() const;  // instruction templates stored (kept as items come and fold: O(1))
  size_t repeats() const;    // repeats stored (nested ones included)

 private:
  void append(Item item);
  bool extend();
  bool fold();
  std::vector<Item> items_;
  std::vector<uint64_t> starts_;  // per item: the index of its first instruction
  uint64_t size_ = 0;
  size_t templates_ = 0;
  bool compact_ = true;
};

// The storage of a program's shared tails: the distinct regions, and the lists of indices
// into them (a deque: a list stays where it is while more are added).
struct SharedRegions {
  std::vector<Region> table;
  std::deque<SharedRegionList> lists;
};

// What the units execute. The compiler's result (sim/compiler/compiled.h) extends it
// with the report's per-layer facts and totals.
struct Program {
  InstructionStream instructions;
  // The shared tails of the instructions' region lists (RegionList::set_shared_tail), each
  // stored once; shared so that a copy of the program keeps them alive.
  std::shared_ptr<SharedRegions> shared_regions = std::make_shared<SharedRegions>();
};

}  // namespace tessera::isa
