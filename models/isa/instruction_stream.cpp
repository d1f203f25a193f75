// The compact program (issue 19): repeats with counts and strides, folded as instructions
// are appended, decoded on the fly by readers.
#include <algorithm>

#include "models/isa/program.h"

namespace tessera::isa {

namespace {

// Visits the numeric fields of `in` in Stride's order: f(field index, field).
template <typename I, typename F>
void for_each_field(I& in, F&& f) {
  f(0, in.layer);
  f(1, in.weight_tiles);
  f(2, in.bytes);
  f(3, in.ub_address);
  f(4, in.weight_address);
  f(5, in.tile.m);
  f(6, in.tile.k);
  f(7, in.tile.n);
  f(8, in.ub_read_bytes);
  f(9, in.ub_write_bytes);
  f(10, in.rows);
  f(11, in.cols);
  f(12, in.elements);
  f(13, in.element_bytes);
  int base = Stride::kScalars;
  for (auto* list : {&in.reads, &in.writes}) {
    const size_t n = std::min<size_t>(list->own_size(), Stride::kStridedRegions);
    for (size_t r = 0; r < n; ++r) {
      auto& reg = list->own_region(r);
      const int b = base + static_cast<int>(r) * Stride::kRegionFields;
      f(b, reg.buffer);
      f(b + 1, reg.row_begin);
      f(b + 2, reg.row_end);
      f(b + 3, reg.col_begin);
      f(b + 4, reg.col_end);
    }
    base += Stride::kStridedRegions * Stride::kRegionFields;
  }
}

bool same_regions_shape(const RegionList& a, const RegionList& b) {
  if (a.own_size() != b.own_size() || a.shared_size() != b.shared_size() || a.shared_tail() != b.shared_tail()) return false;
  for (size_t r = 0; r < a.own_size(); ++r) {
    const Region& x = a.own_region(r);
    const Region& y = b.own_region(r);
    if (x.space != y.space) return false;
    if (r >= static_cast<size_t>(Stride::kStridedRegions) && !(x == y)) return false;
  }
  return true;
}

bool same_shape(const Instruction& a, const Instruction& b) {
  return a.op == b.op && a.weight_source == b.weight_source && a.function == b.function && a.spill == b.spill &&
         a.accumulate == b.accumulate && a.core == b.core && a.unit == b.unit && a.a_dtype == b.a_dtype && a.b_dtype == b.b_dtype &&
         a.vector_function == b.vector_function && a.vector_class == b.vector_class && same_regions_shape(a.reads, b.reads) &&
         same_regions_shape(a.writes, b.writes);
}

// Per template of items a[0..n) and b[0..n) (depth first): b's as a's plus a stride; false
// when the items differ in structure (kinds, counts, inner strides) or in anything else.
bool strides_between(const InstructionStream::Item* a, const InstructionStream::Item* b, size_t n,
                     std::vector<Stride>& out) {
  for (size_t i = 0; i < n; ++i) {
    const auto& x = a[i];
    const auto& y = b[i];
    if ((x.loop == nullptr) != (y.loop == nullptr)) return false;
    if (x.loop == nullptr) {
      Stride s;
      if (!stride_between(x.in, y.in, s)) return false;
      out.push_back(s);
      continue;
    }
    const auto& lx = *x.loop;
    const auto& ly = *y.loop;
    if (lx.count != ly.count || lx.body.size() != ly.body.size() || lx.stride != ly.stride) return false;
    if (!strides_between(lx.body.data(), ly.body.data(), lx.body.size(), out)) return false;
  }
  return true;
}

// Quick test before strides_between: the same kind, opcode or count.
bool alike(const InstructionStream::Item& x, const InstructionStream::Item& y) {
  if ((x.loop == nullptr) != (y.loop == nullptr)) return false;
  if (x.loop == nullptr) return x.in.op == y.in.op;
  return x.loop->count == y.loop->count && x.loop->body.size() == y.loop->body.size() && x.templates == y.templates;
}

// The template index (depth first) of instruction `offset` of `item`, with `out` set to it.
uint32_t decode(const InstructionStream::Item& item, uint64_t offset, Instruction& out) {
  if (item.loop == nullptr) {
    out = item.in;
    return 0;
  }
  const auto& loop = *item.loop;
  const uint64_t body_size = item.size / loop.count;
  const uint64_t iter = offset / body_size;
  uint64_t rest = offset % body_size;
  uint32_t before = 0;
  for (const auto& b : loop.body) {
    if (rest < b.size) {
      const uint32_t t = before + decode(b, rest, out);
      if (iter > 0) add_stride(out, loop.stride[t], iter);
      return t;
    }
    rest -= b.size;
    before += b.templates;
  }
  throw std::logic_error("InstructionStream: an offset past its item");
}

size_t count_templates(const std::vector<InstructionStream::Item>& items, size_t& repeats) {
  size_t n = 0;
  for (const auto& it : items) {
    if (it.loop == nullptr) {
      ++n;
    } else {
      ++repeats;
      n += count_templates(it.loop->body, repeats);
    }
  }
  return n;
}

}  // namespace

std::string_view Stride::field_name(int f) {
  static constexpr std::string_view kScalarNames[kScalars] = {
      "layer", "weight_tiles", "bytes", "ub", "dram", "m", "k", "n", "ub_read", "ub_write", "rows", "cols", "elements",
      "element_bytes"};
  static const std::vector<std::string> kRegionNames = [] {
    std::vector<std::string> v;
    for (const char* list : {"read", "write"}) {
      for (int r = 0; r < kStridedRegions; ++r) {
        for (const char* field : {"buffer", "row_begin", "row_end", "col_begin", "col_end"}) {
          v.push_back(std::string(list) + std::to_string(r) + "." + field);
        }
      }
    }
    return v;
  }();
  if (f < kScalars) return kScalarNames[f];
  return kRegionNames[static_cast<size_t>(f - kScalars)];
}

bool Stride::zero() const {
  return std::all_of(d.begin(), d.end(), [](int64_t x) { return x == 0; });
}

bool stride_between(const Instruction& a, const Instruction& b, Stride& out) {
  if (!same_shape(a, b)) return false;
  out = Stride{};
  for_each_field(a, [&](int f, const auto& field) { out.d[static_cast<size_t>(f)] = static_cast<int64_t>(field); });
  for_each_field(b, [&](int f, const auto& field) {
    // Modulo 2^64: exact for every field type (add_stride adds it back the same way).
    auto& d = out.d[static_cast<size_t>(f)];
    d = static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(field)) - static_cast<uint64_t>(d));
  });
  return true;
}

void add_stride(Instruction& in, const Stride& s, uint64_t times) {
  for_each_field(in, [&](int f, auto& field) {
    using T = std::remove_reference_t<decltype(field)>;
    const uint64_t step = static_cast<uint64_t>(s.d[static_cast<size_t>(f)]) * times;
    field = static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(field)) + step);
  });
}

InstructionStream::Item::Item(const Item& o)
    : in(o.in), loop(o.loop ? std::make_unique<Loop>(*o.loop) : nullptr), size(o.size), templates(o.templates) {}

InstructionStream::Item& InstructionStream::Item::operator=(const Item& o) {
  if (this != &o) {
    in = o.in;
    loop = o.loop ? std::make_unique<Loop>(*o.loop) : nullptr;
    size = o.size;
    templates = o.templates;
  }
  return *this;
}

void InstructionStream::push_back(Instruction in) { append(Item(std::move(in))); }

void InstructionStream::append(Item item) {
  starts_.push_back(size_);
  size_ += item.size;
  templates_ += item.templates;
  items_.push_back(std::move(item));
  if (!compact_) return;
  while (extend() || fold()) {
  }
}

// The last items complete one more iteration of the repeat before them: absorbed.
bool InstructionStream::extend() {
  const size_t n = items_.size();
  std::vector<Stride> d;
  for (size_t p = 1; p <= kMaxBody && p < n; ++p) {
    Item& r = items_[n - 1 - p];
    if (r.loop == nullptr || r.loop->body.size() != p) continue;
    Loop& loop = *r.loop;
    if (!alike(loop.body[0], items_[n - p])) continue;
    d.clear();
    if (!strides_between(loop.body.data(), &items_[n - p], p, d)) continue;
    bool next = true;
    for (size_t t = 0; t < d.size() && next; ++t) {
      for (size_t f = 0; f < d[t].d.size(); ++f) {
        if (static_cast<uint64_t>(d[t].d[f]) != static_cast<uint64_t>(loop.stride[t].d[f]) * loop.count) {
          next = false;
          break;
        }
      }
    }
    if (!next) continue;
    r.size += r.size / loop.count;
    loop.count++;
    for (size_t i = n - p; i < n; ++i) templates_ -= items_[i].templates;
    items_.resize(n - p);
    starts_.resize(n - p);
    return true;
  }
  return false;
}

// The last p items repeat the p before them with a stride: both become a repeat of 2.
bool InstructionStream::fold() {
  const size_t n = items_.size();
  std::vector<Stride> d;
  for (size_t p = 1; p <= kMaxBody && 2 * p <= n; ++p) {
    const size_t a = n - 2 * p, b = n - p;
    if (!alike(items_[n - 1], items_[b - 1]) || !alike(items_[a], items_[b])) continue;
    d.clear();
    if (!strides_between(&items_[a], &items_[b], p, d)) continue;
    Item rep;
    rep.loop = std::make_unique<Loop>();
    rep.loop->count = 2;
    rep.loop->stride = std::move(d);
    rep.size = 0;
    rep.templates = 0;
    for (size_t i = a; i < b; ++i) {
      rep.size += 2 * items_[i].size;
      rep.templates += items_[i].templates;
      rep.loop->body.push_back(std::move(items_[i]));
    }
    const uint64_t start = starts_[a];
    for (size_t i = b; i < n; ++i) templates_ -= items_[i].templates;
    items_.resize(a);
    starts_.resize(a);
    items_.push_back(std::move(rep));
    starts_.push_back(start);
    return true;
  }
  return false;
}

Instruction InstructionStream::operator[](size_t i) const {
  if (i >= size_) throw std::out_of_range("InstructionStream: instruction " + std::to_string(i) + " of " + std::to_string(size_));
  const size_t item = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), static_cast<uint64_t>(i)) - starts_.begin()) - 1;
  Instruction out;
  decode(items_[item], i - starts_[item], out);
  return out;
}

InstructionStream::const_iterator InstructionStream::end() const {
  return const_iterator(this, items_.size());
}

std::vector<Instruction> InstructionStream::expanded() const {
  std::vector<Instruction> out;
  out.reserve(size());
  for (const Instruction& in : *this) out.push_back(in);
  return out;
}

size_t InstructionStream::templates() const { return templates_; }

size_t InstructionStream::repeats() const {
  size_t repeats = 0;
  count_templates(items_, repeats);
  return repeats;
}

// ---------------------------------------------------------------- the cursor
InstructionStream::const_iterator::const_iterator(const InstructionStream* s, size_t top) : s_(s), top_(top) {
  if (top_ >= s_->items_.size()) {
    index_ = s_->size_;
    return;
  }
  index_ = s_->starts_[top_];
  descend(&s_->items_[top_]);
}

void InstructionStream::const_iterator::descend(const Item* item) {
  while (item->loop != nullptr) {
    frames_.push_back(Frame{item->loop.get(), 0, 0, 0});
    item = &item->loop->body[0];
  }
  materialize(*item);
}

void InstructionStream::const_iterator::materialize(const Item& leaf) {
  cur_ = leaf.in;
  uint32_t t = 0;  // the template's index in the frame's loop
  for (size_t f = frames_.size(); f-- > 0;) {
    const Frame& fr = frames_[f];
    t += fr.templates;
    if (fr.iter > 0) add_stride(cur_, fr.loop->stride[t], fr.iter);
  }
}

InstructionStream::const_iterator& InstructionStream::const_iterator::operator++() {
  ++index_;
  while (!frames_.empty()) {
    Frame& fr = frames_.back();
    fr.templates += fr.loop->body[fr.pos].templates;
    if (++fr.pos == fr.loop->body.size()) {
      fr.pos = 0;
      fr.templates = 0;
      if (++fr.iter == fr.loop->count) {
        frames_.pop_back();
        continue;  // the enclosing repeat moves on
      }
    }
    descend(&fr.loop->body[fr.pos]);
    return *this;
  }
  if (++top_ < s_->items_.size()) descend(&s_->items_[top_]);
  return *this;
}

}  // namespace tessera::isa
