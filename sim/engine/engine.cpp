#include "sim/engine/engine.h"

#include <systemc>

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

#include "models/common/clock.h"
#include "models/common/stats.h"
#include "models/interconnect/memory_router.h"
#include "models/interconnect/pcie_link.h"
#include "models/memory/weight_fifo.h"
#include "models/memory/weight_memory_model.h"
#include "models/units/controller.h"
#include "models/units/dma_engine.h"
#include "models/units/matrix_unit.h"
#include "models/units/vector_unit.h"
#include "models/units/weight_fetcher.h"
#include "sim/common/error.h"

namespace tessera::engine {

using models::Interval;

int64_t CycleBreakdown::total() const {
  int64_t sum = 0;
  for (size_t b = 0; b < kBucketCount; ++b) {
    if (std::string_view(kBuckets[b].part_of).empty()) sum += by_bucket[b];
  }
  return sum;
}

CycleBreakdown& CycleBreakdown::operator+=(const CycleBreakdown& o) {
  for (size_t b = 0; b < kBucketCount; ++b) by_bucket[b] += o.by_bucket[b];
  return *this;
}

namespace {

// The name of a unit of core `c`: TPU v1's names on a chip of one core and one matrix unit
// ("matrix_unit"), else with the core as a prefix and the unit's index as a suffix
// ("core1_matrix_unit3"), so reports and traces of TPU v1 read as before.
std::string unit_name(const ArchConfig& arch, int64_t core, std::string_view kind, int64_t index, int64_t count) {
  std::string n = arch.active_cores() > 1 ? "core" + std::to_string(core) + "_" : "";
  n += kind;
  if (count > 1) n += std::to_string(index);
  return n;
}

// One core: its controller, matrix units (each with its weight fetcher and FIFO), vector
// unit, scratchpad ports and DMA engines, running its share of the program.
struct Core {
  isa::Program owned;            // this core's share, filtered from the program (several cores)
  const isa::Program& program;   // what it runs: `owned`, or the whole program on a chip of one core
  models::CompletionTracker tracker;
  models::UnitContext ctx;
  models::UnifiedBufferPorts ub;
  std::vector<std::unique_ptr<models::WeightFifo>> fifos;
  std::unique_ptr<models::DmaEngine> host_dma;  // only with a host link
  std::vector<std::unique_ptr<models::WeightFetcher>> fetchers;
  std::vector<std::unique_ptr<models::MatrixUnit>> matrices;
  std::unique_ptr<models::VectorUnit> vector;
  std::vector<std::unique_ptr<models::DmaEngine>> dmas;  // device DMA engines
  std::unique_ptr<models::Controller> controller;

  Core(const ArchConfig& arch, int64_t c, const isa::Program* whole, isa::Program share, const models::CoreClock& clock,
       models::ChipBarrier* barrier, bool device_dma)
      : owned(std::move(share)),
        program(whole != nullptr ? *whole : owned),
        ctx{arch.array, arch.unified_buffer, arch.vector_unit, arch.controller, arch.weight_memory, program, clock,
            tracker, arch.ideal_memory, barrier} {
    const int64_t units = arch.array.count;
    // The compiler puts every transfer on core 0: only it has the host link's DMA engine.
    const bool host_link = arch.has_host_link && c == 0;
    models::QueueLayout layout{static_cast<int>(units), device_dma ? static_cast<int>(arch.dma.engines) : 0, host_link};
    std::vector<sc_core::sc_fifo<models::Dispatch>*> queues(static_cast<size_t>(layout.queues()), nullptr);
    if (host_link) {
      host_dma = std::make_unique<models::DmaEngine>(unit_name(arch, c, "host_dma", 0, 1).c_str(), ctx);
      queues[static_cast<size_t>(layout.host_dma_queue())] = &host_dma->queue;
    }
    for (int64_t u = 0; u < units; ++u) {
      fifos.push_back(std::make_unique<models::WeightFifo>(arch.weight_fifo.depth_tiles, clock));
      fetchers.push_back(std::make_unique<models::WeightFetcher>(
          unit_name(arch, c, "weight_fetcher", u, units).c_str(), ctx, *fifos.back()));
      queues[static_cast<size_t>(layout.fetcher_queue(static_cast<int>(u)))] = &fetchers.back()->queue;
    }
    for (int64_t u = 0; u < units; ++u) {
      matrices.push_back(std::make_unique<models::MatrixUnit>(unit_name(arch, c, "matrix_unit", u, units).c_str(), ctx,
                                                              *fifos[static_cast<size_t>(u)], ub));
      queues[static_cast<size_t>(layout.matrix_queue(static_cast<int>(u)))] = &matrices.back()->queue;
    }
    vector = std::make_unique<models::VectorUnit>(unit_name(arch, c, "vector_unit", 0, 1).c_str(), ctx, ub);
    queues[static_cast<size_t>(layout.vector_queue())] = &vector->queue;
    for (int e = 0; e < layout.dma_engines; ++e) {
      dmas.push_back(std::make_unique<models::DmaEngine>(unit_name(arch, c, "dma", e, layout.dma_engines).c_str(), ctx,
                                                         clock.cycles_for_ns(arch.dma.latency_ns),
                                                         arch.dma.bandwidth_gb_per_s));
      queues[static_cast<size_t>(layout.dma_queue(e))] = &dmas.back()->queue;
    }
    controller = std::make_unique<models::Controller>(unit_name(arch, c, "controller", 0, 1).c_str(), ctx,
                                                      std::move(queues), layout);
  }
  // No interval a unit of this core logs from now on begins before this cycle.
  int64_t low_water(int64_t now) const {
    int64_t low = std::min(controller->low_water(now), vector->low_water(now));
    for (const auto& m : matrices) low = std::min(low, m->low_water(now));
    return low;
  }
};

// The instructions of core `c`, in program order (the compiler tags each with its core).
isa::Program core_program(const compiler::Program& program, int64_t c) {
  isa::Program out;
  out.shared_regions = program.shared_regions;
  for (const auto& in : program.instructions) {
    if (in.core == c) out.instructions.push_back(in);
  }
  return out;
}

// The SystemC top: the chip's cores, sharing device (weight) memory and the host link. A
// chip of one core and one matrix unit is TPU v1's block diagram.
struct Accelerator : sc_core::sc_module {
  std::unique_ptr<models::PcieLink> pcie;  // only with a host link
  std::unique_ptr<models::WeightMemoryModel> weight_memory;  // built by the factory from weight_memory.technology
  std::unique_ptr<models::MemoryRouter> memory_port;         // several initiators: one socket each
  std::unique_ptr<models::ChipBarrier> barrier;
  std::vector<std::unique_ptr<Core>> cores;

  Accelerator(sc_core::sc_module_name name, const ArchConfig& arch, const compiler::Program& program,
              const models::CoreClock& clock)
      : sc_module(name) {
    if (arch.has_host_link) pcie = std::make_unique<models::PcieLink>("pcie", arch.pcie, clock, arch.ideal_memory);
    weight_memory = arch.ideal_memory ? models::make_ideal_weight_memory("weight_memory")
                                      : models::make_weight_memory("weight_memory", arch.weight_memory, clock);
    const int64_t n = arch.active_cores();
    if (n > 1) barrier = std::make_unique<models::ChipBarrier>(static_cast<int>(n));
    // Device DMA engines exist where the program moves tensors to or from device memory.
    bool device_dma = false;
    for (const auto& in : program.instructions) {
      if (in.op == compiler::Opcode::kDmaRead || in.op == compiler::Opcode::kDmaWrite) {
        device_dma = true;
        break;
      }
    }
    for (int64_t c = 0; c < n; ++c) {
      cores.push_back(std::make_unique<Core>(arch, c, n > 1 ? nullptr : &program,
                                             n > 1 ? core_program(program, c) : isa::Program{}, clock, barrier.get(),
                                             device_dma));
    }
    std::vector<tlm_utils::simple_initiator_socket<models::WeightFetcher>*> fetchers;
    std::vector<tlm_utils::simple_initiator_socket<models::DmaEngine>*> dmas;
    models::DmaEngine* host_dma = nullptr;
    for (auto& core : cores) {
      if (core->host_dma) host_dma = core->host_dma.get();
      for (auto& f : core->fetchers) fetchers.push_back(&f->socket);
      for (auto& d : core->dmas) dmas.push_back(&d->socket);
    }
    // Weights in host memory (residency.weights: host; the config requires a host link):
    // the fetchers read them over PCIe, sharing the link with the host DMA (MemoryRouter).
    const bool weights_on_host = arch.residency.weights == Residency::kHost;
    if (weights_on_host) {
      memory_port = std::make_unique<models::MemoryRouter>("memory_port", true);
      memory_port->initiator.bind(weight_memory->target_socket());
      memory_port->host->bind(pcie->socket);
      if (host_dma) memory_port->connect(host_dma->socket, models::MemoryRouter::Route::kHost);
      for (auto* f : fetchers) memory_port->connect(*f, models::MemoryRouter::Route::kHost);
      for (auto* d : dmas) memory_port->connect(*d);
      return;
    }
    if (host_dma) host_dma->socket.bind(pcie->socket);
    if (fetchers.size() == 1 && dmas.empty()) {
      fetchers.front()->bind(weight_memory->target_socket());
    } else {
      memory_port = std::make_unique<models::MemoryRouter>("memory_port");
      memory_port->initiator.bind(weight_memory->target_socket());
      for (auto* f : fetchers) memory_port->connect(*f);
      for (auto* d : dmas) memory_port->connect(*d);
    }
  }
  Core& core0() { return *cores.front(); }
};

bool begins_before(const Interval& a, const Interval& b) { return a.begin < b.begin; }

// Sorted by begin, overlapping and touching intervals merged (the first one's fields kept).
std::vector<Interval> merged(std::vector<Interval> v) {
  std::stable_sort(v.begin(), v.end(), begins_before);
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

// Walks a sorted list of non-overlapping intervals alongside increasing time.
class Cursor {
 public:
  explicit Cursor(const std::vector<Interval>& v) : v_(v) {}
  const Interval* at(int64_t t) {
    while (pos_ < v_.size() && v_[pos_].end <= t) ++pos_;
    return pos_ < v_.size() && v_[pos_].begin <= t ? &v_[pos_] : nullptr;
  }

 private:
  const std::vector<Interval>& v_;
  size_t pos_ = 0;
};

// What a cycle claimed by an interval of a source goes to: indices into kBuckets, -1 for none.
struct Booking {
  int bucket = -1;
  int part = -1;  // a part of the bucket (array_drain, pcie_input), booked on top of it
  bool claims() const { return bucket >= 0; }
};

// kBuckets' producers resolved against the units' kind names, once: per source and kind (in
// the source's own numbering: MatrixUnit::Kind, Controller::Kind, PcieLink::Kind, the opcode;
// 0 for a source of one kind) the booking. A producer naming a kind its source does not have
// is an internal error.
class BucketRules {
 public:
  static const BucketRules& get() {
    static const BucketRules rules;
    return rules;
  }
  const Booking& at(BucketSource source, int32_t kind) const {
    static const Booking none;
    const auto& v = by_source_[static_cast<size_t>(source)];
    return kind >= 0 && static_cast<size_t>(kind) < v.size() ? v[static_cast<size_t>(kind)] : none;
  }

 private:
  using S = BucketSource;
  static constexpr size_t kSources = static_cast<size_t>(S::kNone);

  template <typename Kind, size_t N>
  static std::vector<std::string_view> names_of(const models::KindNames<Kind, N>& kinds) {
    std::vector<std::string_view> out;
    for (const auto& [k, name] : kinds) {
      const auto i = static_cast<size_t>(k);
      if (out.size() <= i) out.resize(i + 1);
      out[i] = name;
    }
    return out;
  }

  BucketRules() {
    std::vector<std::string_view> opcodes;
    for (int op = 0; op <= static_cast<int>(isa::Opcode::kDmaWrite); ++op) {
      opcodes.push_back(isa::opcode_name(static_cast<isa::Opcode>(op)));
    }
    resolve(S::kArray, names_of(models::MatrixUnit::kKindNames));
    resolve(S::kMatmulWait, names_of(models::Controller::kKindNames));
    resolve(S::kDrain, {""});
    resolve(S::kPcie, names_of(models::PcieLink::kKindNames));
    resolve(S::kDeviceDma, {""});
    resolve(S::kVector, {""});
    resolve(S::kControllerHead, opcodes);
    resolve(S::kIdle, {""});
    for (const BucketDef& b : kBuckets) {
      for (const BucketProducer& p : b.producers) {
        if (p.source == S::kNone || std::string_view(p.kind).empty()) continue;
        const auto& kinds = kinds_[static_cast<size_t>(p.source)];
        if (std::find(kinds.begin(), kinds.end(), std::string_view(p.kind)) == kinds.end()) {
          throw std::logic_error(std::string("engine: cycle-breakdown bucket '") + b.name + "' names the kind '" + p.kind +
                                 "', which its source does not log (kBuckets, sim/engine/engine.h)");
        }
      }
    }
  }

  void resolve(S source, std::vector<std::string_view> kinds) {
    auto& v = by_source_[static_cast<size_t>(source)];
    v.assign(kinds.size(), Booking{});
    for (size_t k = 0; k < kinds.size(); ++k) {
      v[k].bucket = match(source, kinds[k], false);
      v[k].part = match(source, kinds[k], true);
    }
    kinds_[static_cast<size_t>(source)] = std::move(kinds);
  }

  // The bucket (or part) with a producer of `source` naming `kind`, else one for any kind.
  static int match(S source, std::string_view kind, bool part) {
    int any = -1;
    for (size_t b = 0; b < kBucketCount; ++b) {
      if (std::string_view(kBuckets[b].part_of).empty() == part) continue;
      for (const BucketProducer& p : kBuckets[b].producers) {
        if (p.source != source) continue;
        const std::string_view pk = p.kind;
        if (!pk.empty() && pk == kind) return static_cast<int>(b);
        if (pk.empty() && any < 0) any = static_cast<int>(b);
      }
    }
    return any;
  }

  std::array<std::vector<Booking>, kSources> by_source_;
  std::array<std::vector<std::string_view>, kSources> kinds_;
};

// What classify tells apart in the logs it reads of the array, the vector unit and the
// controller, as a key per interval: adjacent intervals with equal keys classify every cycle
// alike, so each log stores a run of them as one interval when no trace reads it (issue 19:
// the controller logs two intervals per instruction, and a layer's weight reads or matmuls
// follow each other). The array: its kind and layer; the vector unit and DMA engines: the
// layer; the controller: the layer and its bookings (BucketRules) as a matmul's wait and as
// the head.
void coalesce_breakdown_logs(Accelerator& acc) {
  using compiler::Opcode;
  auto key = [](int64_t cls, int32_t layer) { return (cls << 32) | static_cast<uint32_t>(layer); };
  // The controller's intervals classify alike when they book the same way as a matmul's
  // wait (only a matmul's) and as the head.
  const BucketRules& rules = BucketRules::get();
  constexpr int64_t kB = static_cast<int64_t>(kBucketCount) + 1;
  auto booking_key = [kB](const Booking& b) { return (b.bucket + 1) * kB + b.part + 1; };
  for (auto& core : acc.cores) {
    for (auto& m : core->matrices) m->log().coalesce_by([key](const Interval& i) { return key(i.kind, i.layer); });
    core->vector->log().coalesce_by([key](const Interval& i) { return key(0, i.layer); });
    core->controller->log().coalesce_by([key, &rules, kB, booking_key](const Interval& i) {
      static const Booking none;
      const Booking& wait =
          static_cast<Opcode>(i.detail) == Opcode::kMatmul ? rules.at(BucketSource::kMatmulWait, i.kind) : none;
      const Booking& head = rules.at(BucketSource::kControllerHead, i.detail);
      return key(booking_key(wait) * kB * kB + booking_key(head), i.layer);
    });
    for (auto& d : core->dmas) d->log().coalesce_by([key](const Interval& i) { return key(0, i.layer); });
  }
}

// Of several matrix units' intervals at one cycle, the one the breakdown books: a unit that
// streams beats one stretched by its input, then one shifting weights in, then one waiting
// for them (the chip computes when any unit does).
int array_rank(int32_t kind) {
  switch (kind) {
    case models::MatrixUnit::kActive: return 0;
    case models::MatrixUnit::kInputStall: return 1;
    case models::MatrixUnit::kWeightShift: return 2;
    default: return 3;
  }
}

// The cycle breakdown (DESIGN.md): every cycle of the run goes to one bucket and one layer
// by what the matrix units, their drains, the controllers, PCIe, the device DMA engines and
// the vector units do in it. It is classified as the run goes, behind the units (issue 19:
// memory for the intervals still open, not for the whole run): advance(to) takes the
// intervals the logs hold, classifies the cycles before `to` and keeps only the intervals
// that reach past it. `to` must be a cycle before which no unit logs another interval
// (their low-water marks); an interval that begins before a cycle already classified breaks
// that promise and stops the run. Splitting the run at `to` changes nothing: a segment
// [a, b) cut at `to` is two with the state of a. On a chip of one core and one matrix unit
// (TPU v1) each kind of log is one unit's; with several, a cycle is booked by the busiest
// state among the units of a kind (array_rank; the first core's controller and vector unit
// that have an interval there).
class Breakdown {
 public:
  // consume: take the intervals out of the logs (when no trace reads them); otherwise they
  // are copied, and advance is called once, at the end.
  Breakdown(Accelerator& acc, RunStats& stats, bool consume) : acc_(acc), stats_(stats), consume_(consume) {
    for (auto& core : acc.cores) {
      for (auto& m : core->matrices) add_source(kArray, &m->log());
      add_source(kController, &core->controller->log());
      add_source(kVector, &core->vector->log());
      for (auto& d : core->dmas) add_source(kDma, &d->log());
    }
    if (acc.pcie) add_source(kPcie, &acc.pcie->server().log());
    drain_ = sources_.size();
    sources_.push_back(Source{kDrain, nullptr, {}});
  }

  void advance(int64_t to) {
    if (to <= done_) return;
    for (Source& src : sources_) {
      if (src.log != nullptr) gather(*src.log, src.pending);
      // A server's log is in call order; a backfilled transfer can come after a later one.
      if (src.kind == kPcie) std::stable_sort(src.pending.begin(), src.pending.end(), begins_before);
    }
    {
      std::vector<Interval> raw = std::move(sources_[drain_].pending);
      for (auto& core : acc_.cores) {
        for (auto& m : core->matrices) gather(m->drain_log(), raw);
      }
      sources_[drain_].pending = merged(std::move(raw));
    }
    classify(to);
    // Only what reaches past `to` matters from now on. A drain ending at `to` stays: one
    // beginning there merges with it and takes its layer.
    for (Source& src : sources_) {
      std::erase_if(src.pending, [&](const Interval& i) { return src.kind == kDrain ? i.end < to : i.end <= to; });
    }
    done_ = to;
  }

 private:
  enum Kind { kArray, kDrain, kController, kPcie, kVector, kDma };
  struct Source {
    Kind kind;
    models::IntervalLog* log;  // null for the drains (gathered from every matrix unit)
    std::vector<Interval> pending;
  };
  void add_source(Kind kind, models::IntervalLog* log) { sources_.push_back(Source{kind, log, {}}); }

  void gather(models::IntervalLog& log, std::vector<Interval>& into) {
    const size_t first = into.size();
    if (consume_) {
      log.move_intervals_to(into);
    } else {
      into.insert(into.end(), log.intervals().begin(), log.intervals().end());
    }
    for (size_t k = first; k < into.size(); ++k) {
      if (into[k].begin < done_) {
        throw std::logic_error("engine: a unit logged an interval beginning at cycle " + std::to_string(into[k].begin) +
                               " after the cycle breakdown had classified the cycles up to " + std::to_string(done_));
      }
    }
  }

  // Classifies the cycles [done_, to), the segment boundaries (every interval's begin and
  // end) clamped to `to`.
  void classify(int64_t to) {
    using compiler::Opcode;
    RunStats& stats = stats_;
    const size_t n = sources_.size();

    // A log whose intervals are sorted and disjoint (all of them, as the units write them)
    // gives its boundaries in order (begin, end, begin, ...): the logs are merged as they
    // are walked instead of copied into one list and sorted. Any other log is sorted in a copy.
    std::vector<std::vector<int64_t>> unordered(n);  // boundaries of a log that is not in order, sorted
    for (size_t l = 0; l < n; ++l) {
      const auto& log = sources_[l].pending;
      bool in_order = true;
      for (size_t k = 0; k < log.size() && in_order; ++k) {
        in_order = log[k].begin <= log[k].end && (k == 0 || log[k - 1].end <= log[k].begin);
      }
      if (in_order) continue;
      for (const Interval& i : log) {
        unordered[l].push_back(std::min(i.begin, to));
        unordered[l].push_back(std::min(i.end, to));
      }
      std::sort(unordered[l].begin(), unordered[l].end());
    }
    std::vector<size_t> next(n, 0);  // per log: the index of its next boundary
    auto boundaries = [&](size_t l) { return unordered[l].empty() ? 2 * sources_[l].pending.size() : unordered[l].size(); };
    auto boundary = [&](size_t l, size_t k) {
      if (!unordered[l].empty()) return unordered[l][k];
      const Interval& i = sources_[l].pending[k / 2];
      return std::min(k % 2 == 0 ? i.begin : i.end, to);
    };
    // The smallest boundary after t (`to` when none is left before it).
    auto next_after = [&](int64_t t) {
      int64_t best = to;
      for (size_t l = 0; l < n; ++l) {
        size_t& k = next[l];
        const size_t nb = boundaries(l);
        while (k < nb && boundary(l, k) <= t) ++k;
        if (k < nb) best = std::min(best, boundary(l, k));
      }
      return best;
    };

    std::vector<Cursor> cursors;
    cursors.reserve(n);
    for (const Source& src : sources_) cursors.emplace_back(src.pending);
    // The interval of the first log of `kind` that has one at `a` (the best-ranked one for the arrays).
    auto first_at = [&](Kind kind, int64_t a) -> const Interval* {
      const Interval* best = nullptr;
      for (size_t l = 0; l < n; ++l) {
        if (sources_[l].kind != kind) continue;
        const Interval* i = cursors[l].at(a);
        if (i == nullptr) continue;
        if (kind != kArray) return i;
        if (best == nullptr || array_rank(i->kind) < array_rank(best->kind)) best = i;
      }
      return best;
    };

    // The sources in the order the breakdown asks them (BucketSource); the first whose
    // interval at the cycle has a booking claims it. Each interval is looked up only when
    // the sources before it have not claimed the cycle.
    const BucketRules& rules = BucketRules::get();
    for (int64_t a = done_, b = 0; a < to; a = b) {
      b = next_after(a);
      const int64_t len = b - a;
      const Booking* booking = nullptr;
      int32_t layer = -1;
      auto claim = [&](BucketSource source, const Interval* i, auto kind_of) {
        if (booking != nullptr || i == nullptr) return;
        const Booking& bk = rules.at(source, kind_of(*i));
        if (!bk.claims()) return;
        booking = &bk;
        layer = i->layer;
      };
      auto by_kind = [](const Interval& i) { return i.kind; };
      auto one_kind = [](const Interval&) { return int32_t{0}; };
      const Interval* ctl = first_at(kController, a);
      claim(BucketSource::kArray, first_at(kArray, a), by_kind);
      if (ctl && ctl->instruction >= 0 && static_cast<Opcode>(ctl->detail) == Opcode::kMatmul) {
        // The next matmul waits at the controller: an exposed drain under it (the results
        // it waits for are still leaving the array) is that wait, not array work.
        claim(BucketSource::kMatmulWait, ctl, by_kind);
      }
      if (!booking) claim(BucketSource::kDrain, first_at(kDrain, a), one_kind);
      if (!booking) {
        claim(BucketSource::kPcie, first_at(kPcie, a), [](const Interval& t) {
          return t.instruction < 0 ? int32_t{models::PcieLink::kToDevice} : t.kind;
        });
      }
      if (!booking) claim(BucketSource::kDeviceDma, first_at(kDma, a), one_kind);
      if (!booking) claim(BucketSource::kVector, first_at(kVector, a), one_kind);
      claim(BucketSource::kControllerHead, ctl, [](const Interval& i) { return int32_t{i.detail}; });
      if (!booking) booking = &rules.at(BucketSource::kIdle, 0);
      if (!booking->claims()) throw std::logic_error("engine: no cycle-breakdown bucket for an idle cycle (kBuckets)");
      CycleBreakdown& owner = layer >= 0 && static_cast<size_t>(layer) < stats.layers.size()
                                  ? stats.layers[static_cast<size_t>(layer)].cycles
                                  : stats.host_io;
      for (const int k : {booking->bucket, booking->part}) {
        if (k < 0) continue;
        stats.cycles.by_bucket[static_cast<size_t>(k)] += len;
        owner.by_bucket[static_cast<size_t>(k)] += len;
      }
    }
  }

  Accelerator& acc_;
  RunStats& stats_;
  const bool consume_;
  std::vector<Source> sources_;
  size_t drain_ = 0;  // the drains' source
  int64_t done_ = 0;  // the cycles before it are classified
};

// SystemC warnings and errors must not pass silently.
void make_systemc_strict() {
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DISPLAY | sc_core::SC_THROW);
  sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_DISPLAY | sc_core::SC_THROW);
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  // The clock stops a run that passes the simulated-time bound; the engine then reports it.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

std::vector<UnitTrack> collect_tracks(const ArchConfig& arch, const Accelerator& acc) {
  auto track = [](std::string unit, const std::vector<Interval>& v, auto name_of) {
    UnitTrack t{std::move(unit), {}};
    t.events.reserve(v.size());
    for (const auto& i : v) t.events.push_back(TraceEvent{i.begin, i.end, name_of(i), i.layer, i.instruction});
    return t;
  };
  std::vector<UnitTrack> tracks;
  for (size_t c = 0; c < acc.cores.size(); ++c) {
    const Core& core = *acc.cores[c];
    // Each instruction's opcode, read from the core's program once (one byte each): the
    // tracks name the DMA engines' and the vector unit's intervals by it.
    std::vector<compiler::Opcode> ops;
    ops.reserve(core.program.instructions.size());
    for (const auto& in : core.program.instructions) ops.push_back(in.op);
    auto opname = [&ops](const Interval& i) {
      return i.instruction >= 0 ? std::string(compiler::opcode_name(ops[static_cast<size_t>(i.instruction)]))
                                : std::string("busy");
    };
    const auto name = [&](std::string_view kind, int64_t index, int64_t count) {
      return unit_name(arch, static_cast<int64_t>(c), kind, index, count);
    };
    tracks.push_back(track(name("controller", 0, 1), core.controller->log().intervals(), [](const Interval& i) {
      return std::string(models::kind_name(models::Controller::kKindNames, i.kind));
    }));
    if (core.host_dma) tracks.push_back(track(name("host_dma", 0, 1), core.host_dma->log().intervals(), opname));
    if (c == 0) {
      if (acc.pcie) {
        tracks.push_back(track("pcie", acc.pcie->server().log().intervals(), [](const Interval&) { return std::string("transfer"); }));
      }
      tracks.push_back(track("weight_memory", acc.weight_memory->busy_log().intervals(),
                             [](const Interval&) { return std::string("read"); }));
    }
    const auto units = static_cast<int64_t>(core.matrices.size());
    for (int64_t u = 0; u < units; ++u) {
      tracks.push_back(track(name("weight_fifo", u, units), core.fetchers[static_cast<size_t>(u)]->log().intervals(),
                             [](const Interval& i) {
                               return std::string(models::kind_name(models::WeightFetcher::kKindNames, i.kind));
                             }));
    }
    for (int64_t u = 0; u < units; ++u) {
      tracks.push_back(track(name("array", u, units), core.matrices[static_cast<size_t>(u)]->log().intervals(),
                             [](const Interval& i) {
                               return std::string(models::kind_name(models::MatrixUnit::kKindNames, i.kind));
                             }));
    }
    tracks.push_back(track(name("vector_unit", 0, 1), core.vector->log().intervals(), opname));
    const auto engines = static_cast<int64_t>(core.dmas.size());
    for (int64_t e = 0; e < engines; ++e) {
      tracks.push_back(track(name("dma", e, engines), core.dmas[static_cast<size_t>(e)]->log().intervals(), opname));
    }
  }
  return tracks;
}

}  // namespace

int64_t RunStats::counter_sum(std::string_view kind, std::string_view name) const {
  // "tessera.<module>.<name>", the module "<kind>", "<kind><index>" or "core<c>_<kind>[<index>]".
  int64_t sum = 0;
  for (const Counter& c : counters) {
    const std::string_view path = c.path;
    const size_t dot = path.rfind('.');
    if (dot == std::string_view::npos || path.substr(dot + 1) != name) continue;
    std::string_view module = path.substr(0, dot);
    module = module.substr(module.rfind('.') + 1);
    if (module.starts_with("core")) {
      const size_t us = module.find('_');
      if (us == std::string_view::npos) continue;
      module = module.substr(us + 1);
    }
    while (!module.empty() && module.back() >= '0' && module.back() <= '9') module.remove_suffix(1);
    if (module == kind) sum += c.value;
  }
  return sum;
}

int64_t RunStats::counter(std::string_view path) const {
  for (const Counter& c : counters) {
    if (c.path == path) return c.value;
  }
  throw std::logic_error("engine: no module registered the counter " + std::string(path));
}

RunStats simulate(const ArchConfig& arch, const compiler::Program& program, const SimulateOptions& options) {
  static bool elaborated = false;
  if (elaborated) throw std::logic_error("engine::simulate: SystemC allows one simulation per process");
  elaborated = true;
  make_systemc_strict();
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);

  models::CoreClock clock(arch.clock_mhz);
  auto top = std::make_unique<Accelerator>("tessera", arch, program, clock);
  // The unified-buffer ports' intervals are read by nothing; those of the host DMA, the
  // weight fetchers and weight memory only by a trace. The cycle breakdown (classify) reads
  // the matrix units', drains', controllers', PCIe's, device DMA engines' and vector units' logs.
  for (auto& core : top->cores) {
    core->ub.read.keep_intervals(false);
    core->ub.write.keep_intervals(false);
    if (!options.tracks) {
      if (core->host_dma) core->host_dma->keep_intervals(false);
      for (auto& f : core->fetchers) f->keep_intervals(false);
    }
  }
  if (!options.tracks) top->weight_memory->keep_intervals(false);
  RunStats stats;
  stats.clock_mhz = arch.clock_mhz;
  stats.instructions = static_cast<int64_t>(program.instructions.size());
  stats.layers.resize(program.layers.size());
  // Without a trace, the breakdown's logs store runs of intervals it cannot tell apart as
  // one, and the breakdown classifies the cycles behind the units every
  // SimulateOptions::breakdown_every_instructions instructions of the first core, up to the
  // earliest cycle a unit may still log.
  Breakdown breakdown(*top, stats, !options.tracks);
  const bool classify = options.tracks || options.cycle_breakdown;
  if (!classify) {
    // Nothing reads the breakdown's logs: their running totals (the counters) are all they keep.
    for (auto& core : top->cores) {
      for (auto& m : core->matrices) {
        m->log().keep_intervals(false);
        m->drain_log().keep_intervals(false);
      }
      core->controller->log().keep_intervals(false);
      core->vector->log().keep_intervals(false);
      for (auto& d : core->dmas) d->log().keep_intervals(false);
    }
    if (top->pcie) top->pcie->server().log().keep_intervals(false);
  }
  if (!options.tracks) {
    coalesce_breakdown_logs(*top);
    Core& first = top->core0();
    first.controller->on_issue(
        [&](int64_t issue_cycle) {
          // The first core's controller is at issue_cycle (its low-water mark now).
          const int64_t now = clock.now();
          int64_t low = issue_cycle;
          for (auto& core : top->cores) low = std::min(low, core->low_water(now));
          if (classify) breakdown.advance(low);
          // The unified-buffer ports are reserved by the array and the vector unit for their
          // instructions, which begin no earlier than their low-water marks.
          for (auto& core : top->cores) {
            core->ub.read.forget_before(low);
            core->ub.write.forget_before(low);
          }
        },
        options.breakdown_every_instructions);
  }
  sc_core::sc_start();
  const auto time_overflow = [&] {
    return InputError("arch '" + arch.name + "' (" + arch.source + "): simulated time passes the bound of " +
                      models::kMaxSimulatedText + ": this workload's transfers and compute at the configured bandwidths, latencies and "
                      "rates take longer than the simulator can represent (docs/reliability.md)");
  };
  if (clock.overflowed()) throw time_overflow();
  int64_t total = 0;
  for (auto& core : top->cores) {
    if (!core->controller->finished()) {
      throw std::logic_error("engine: simulation stalled before the program's halt (deadlock in the unit models)");
    }
    core->tracker.retire_all();
    total = std::max({total, core->controller->end_cycle(), core->tracker.last_finish()});
    // A layer split over cores runs from its first dispatch on any core to its last finish.
    const auto& layer_times = core->tracker.layer_times();
    for (size_t l = 0; l < layer_times.size() && l < stats.layers.size(); ++l) {
      LayerStats& ls = stats.layers[l];
      const auto& t = layer_times[l];
      if (t.instructions == 0) continue;
      ls.first_dispatch_cycle = ls.first_dispatch_cycle < 0 ? t.first_dispatch_cycle
                                                            : std::min(ls.first_dispatch_cycle, t.first_dispatch_cycle);
      ls.last_finish_cycle = std::max(ls.last_finish_cycle, t.last_finish_cycle);
      ls.instructions += t.instructions;
    }
  }
  if (total > clock.max_cycle()) throw time_overflow();
  stats.total_cycles = total;
  if (classify) breakdown.advance(total);
  // Every module's counters, wherever it sits in the hierarchy.
  for (models::StatValue& v : models::collect_stats(*top)) {
    stats.counters.push_back(Counter{std::move(v.path), std::move(v.unit), std::move(v.description), v.value});
  }
  const bool pcie = arch.has_host_link;
  stats.macs = stats.counter_sum("matrix_unit", "macs");
  stats.weight_memory_bytes = static_cast<uint64_t>(stats.counter("tessera.weight_memory.bytes_read"));
  stats.device_memory_bytes_written = static_cast<uint64_t>(stats.counter("tessera.weight_memory.bytes_written"));
  stats.pcie_bytes_to_device = pcie ? static_cast<uint64_t>(stats.counter("tessera.pcie.bytes_to_device")) : 0;
  stats.pcie_bytes_to_host = pcie ? static_cast<uint64_t>(stats.counter("tessera.pcie.bytes_to_host")) : 0;
  stats.array_stream_cycles = stats.counter_sum("matrix_unit", "matmul_cycles");
  stats.array_busy_cycles = stats.array_stream_cycles + stats.counter_sum("matrix_unit", "input_stall_cycles");
  stats.weight_memory_busy_cycles = stats.counter("tessera.weight_memory.busy_cycles");
  stats.pcie_busy_cycles = pcie ? stats.counter("tessera.pcie.busy_cycles") : 0;
  stats.vector_busy_cycles = stats.counter_sum("vector_unit", "busy_cycles");
  stats.weight_fifo_full_cycles = stats.counter_sum("weight_fetcher", "fifo_full_cycles");
  if (options.tracks) stats.tracks = collect_tracks(arch, *top);
  return stats;
}

}  // namespace tessera::engine
