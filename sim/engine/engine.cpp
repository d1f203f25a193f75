#include "sim/engine/engine.h"

#include <systemc>

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

#include "models/common/clock.h"
#include "models/common/stats.h"
#include "models/interconnect/pcie_link.h"
#include "models/memory/weight_fifo.h"
#include "models/memory/weight_memory_model.h"
#include "models/units/units.h"
#include "sim/common/error.h"

namespace tessera::engine {

using models::Interval;

CycleBreakdown& CycleBreakdown::operator+=(const CycleBreakdown& o) {
  array_active += o.array_active;
  weight_shift += o.weight_shift;
  weight_stall += o.weight_stall;
  input_stall += o.input_stall;
  raw_stall += o.raw_stall;
  non_matrix += o.non_matrix;
  pcie += o.pcie;
  array_drain += o.array_drain;
  pcie_input += o.pcie_input;
  return *this;
}

namespace {

// The SystemC top: units wired as in the TPU v1 block diagram.
struct Accelerator : sc_core::sc_module {
  models::WeightFifo fifo;
  models::UnifiedBufferPorts ub;
  models::PcieLink pcie;
  std::unique_ptr<models::WeightMemoryModel> weight_memory;  // built by the factory from weight_memory.technology
  models::HostDma dma;
  models::WeightFetcher fetcher;
  models::MatrixUnit matrix;
  models::VectorUnit vector;
  models::Controller controller;

  Accelerator(sc_core::sc_module_name name, const ArchConfig& arch, models::UnitContext& ctx)
      : sc_module(name),
        fifo(arch.weight_fifo.depth_tiles, ctx.clock),
        pcie("pcie", arch.pcie, ctx.clock, arch.ideal_memory),
        weight_memory(arch.ideal_memory ? models::make_ideal_weight_memory("weight_memory")
                                        : models::make_weight_memory("weight_memory", arch.weight_memory, ctx.clock)),
        dma("host_dma", ctx),
        fetcher("weight_fetcher", ctx, fifo),
        matrix("matrix_unit", ctx, fifo, ub),
        vector("vector_unit", ctx, ub),
        controller("controller", ctx, {&dma.queue, &fetcher.queue, &matrix.queue, &vector.queue}) {
    dma.socket.bind(pcie.socket);
    fetcher.socket.bind(weight_memory->target_socket());
  }
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

// What classify tells apart in the logs it reads of the array, the vector unit and the
// controller, as a key per interval: adjacent intervals with equal keys classify every cycle
// alike, so each log stores a run of them as one interval when no trace reads it (issue 19:
// the controller logs two intervals per instruction, and a layer's weight reads or matmuls
// follow each other). The array: its kind and layer; the vector unit: the layer; the
// controller: the layer, the head instruction's opcode as classify asks it (matmul, weight
// read or other) and the kind, the hazard kinds apart and the others (issue, queue full) alike.
void coalesce_breakdown_logs(Accelerator& acc) {
  using compiler::Opcode;
  auto key = [](int64_t cls, int32_t layer) { return (cls << 32) | static_cast<uint32_t>(layer); };
  acc.matrix.log().coalesce_by([key](const Interval& i) { return key(i.kind, i.layer); });
  acc.vector.log().coalesce_by([key](const Interval& i) { return key(0, i.layer); });
  acc.controller.log().coalesce_by([key](const Interval& i) {
    const int64_t kind = i.kind <= models::Controller::kHazardOnWeights ? i.kind : models::Controller::kHazardOnWeights + 1;
    const auto op = static_cast<Opcode>(i.detail);
    const int64_t op_class = op == Opcode::kMatmul ? 0 : op == Opcode::kReadWeights ? 1 : 2;
    return key(kind * 4 + op_class, i.layer);
  });
}

// The cycle breakdown (DESIGN.md): every cycle of the run goes to one bucket and one layer
// by what the array, its drains, the controller, PCIe and the vector unit do in it. It is
// classified as the run goes, behind the units (issue 19: memory for the intervals still
// open, not for the whole run): advance(to) takes the intervals the five logs hold,
// classifies the cycles before `to` and keeps only the intervals that reach past it. `to`
// must be a cycle before which no unit logs another interval (their low-water marks); an
// interval that begins before a cycle already classified breaks that promise and stops the
// run. Splitting the run at `to` changes nothing: a segment [a, b) cut at `to` is two with
// the state of a.
class Breakdown {
 public:
  // consume: take the intervals out of the logs (when no trace reads them); otherwise they
  // are copied, and advance is called once, at the end.
  Breakdown(Accelerator& acc, RunStats& stats, bool consume) : acc_(acc), stats_(stats), consume_(consume) {}

  void advance(int64_t to) {
    if (to <= done_) return;
    gather(acc_.matrix.log(), pending_[kArray]);
    {
      std::vector<Interval> raw = std::move(pending_[kDrain]);
      gather(acc_.matrix.drain_log(), raw);
      pending_[kDrain] = merged(std::move(raw));
    }
    gather(acc_.controller.log(), pending_[kController]);
    // A server's log is in call order; a backfilled transfer can come after a later one.
    gather(acc_.pcie.server().log(), pending_[kPcie]);
    std::stable_sort(pending_[kPcie].begin(), pending_[kPcie].end(), begins_before);
    gather(acc_.vector.log(), pending_[kVector]);
    classify(to);
    // Only what reaches past `to` matters from now on. A drain ending at `to` stays: one
    // beginning there merges with it and takes its layer.
    for (size_t l = 0; l < kLogs; ++l) {
      std::erase_if(pending_[l], [&](const Interval& i) { return l == kDrain ? i.end < to : i.end <= to; });
    }
    done_ = to;
  }

 private:
  enum Log : size_t { kArray, kDrain, kController, kPcie, kVector, kLogs };

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
    const auto& array_log = pending_[kArray];
    const auto& drains = pending_[kDrain];
    const auto& ctrl = pending_[kController];
    const auto& pcie = pending_[kPcie];
    const auto& vec = pending_[kVector];
    RunStats& stats = stats_;

    // A log whose intervals are sorted and disjoint (all of them, as the units write them)
    // gives its boundaries in order (begin, end, begin, ...): the logs are merged as they
    // are walked instead of copied into one list and sorted. Any other log is sorted in a copy.
    std::array<std::vector<int64_t>, kLogs> unordered;  // boundaries of a log that is not in order, sorted
    for (size_t l = 0; l < kLogs; ++l) {
      const auto& log = pending_[l];
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
    std::array<size_t, kLogs> next{};  // per log: the index of its next boundary
    auto boundaries = [&](size_t l) { return unordered[l].empty() ? 2 * pending_[l].size() : unordered[l].size(); };
    auto boundary = [&](size_t l, size_t k) {
      if (!unordered[l].empty()) return unordered[l][k];
      const Interval& i = pending_[l][k / 2];
      return std::min(k % 2 == 0 ? i.begin : i.end, to);
    };
    // The smallest boundary after t (`to` when none is left before it).
    auto next_after = [&](int64_t t) {
      int64_t best = to;
      for (size_t l = 0; l < kLogs; ++l) {
        size_t& k = next[l];
        const size_t n = boundaries(l);
        while (k < n && boundary(l, k) <= t) ++k;
        if (k < n) best = std::min(best, boundary(l, k));
      }
      return best;
    };

    Cursor c_array(array_log), c_drain(drains), c_ctrl(ctrl), c_pcie(pcie), c_vec(vec);
    for (int64_t a = done_, b = 0; a < to; a = b) {
      b = next_after(a);
      const int64_t len = b - a;
      int64_t CycleBreakdown::*bucket = &CycleBreakdown::non_matrix;
      int64_t CycleBreakdown::*part = nullptr;  // array_drain or pcie_input: the bucket's part, if any
      int32_t layer = -1;
      const Interval* ctl = c_ctrl.at(a);
      const Interval* drain = c_drain.at(a);
      if (const Interval* i = c_array.at(a)) {
        layer = i->layer;
        switch (i->kind) {
          case models::MatrixUnit::kActive: bucket = &CycleBreakdown::array_active; break;
          case models::MatrixUnit::kWeightShift: bucket = &CycleBreakdown::weight_shift; break;
          case models::MatrixUnit::kWeightStall: bucket = &CycleBreakdown::weight_stall; break;
          default: bucket = &CycleBreakdown::input_stall; break;
        }
      } else if (ctl && ctl->instruction >= 0 && static_cast<Opcode>(ctl->detail) == Opcode::kMatmul &&
                 ctl->kind <= models::Controller::kHazardOnWeights) {
        // The next matmul waits at the controller: an exposed drain under it (the results
        // it waits for are still leaving the array) is that wait, not array work.
        layer = ctl->layer;
        bucket = ctl->kind == models::Controller::kHazardOnHost      ? &CycleBreakdown::pcie
                 : ctl->kind == models::Controller::kHazardOnWeights ? &CycleBreakdown::weight_stall
                                                                     : &CycleBreakdown::raw_stall;
        // A matmul reads the unified buffer: the host transfer it waits for brings its input.
        if (ctl->kind == models::Controller::kHazardOnHost) part = &CycleBreakdown::pcie_input;
      } else if (drain) {
        // The array finishes its last tile with no matmul waiting behind it.
        layer = drain->layer;
        bucket = &CycleBreakdown::array_active;
        part = &CycleBreakdown::array_drain;
      } else if (const Interval* t = c_pcie.at(a)) {
        layer = t->layer;
        bucket = &CycleBreakdown::pcie;
        if (t->instruction < 0 || t->kind != models::PcieLink::kToHost) {
          part = &CycleBreakdown::pcie_input;
        }
      } else if (const Interval* v = c_vec.at(a)) {
        layer = v->layer;
        bucket = &CycleBreakdown::non_matrix;
      } else if (ctl) {
        layer = ctl->layer;
        const auto head = static_cast<Opcode>(ctl->detail);
        bucket = head == Opcode::kReadWeights ? &CycleBreakdown::weight_stall : &CycleBreakdown::non_matrix;
      }
      CycleBreakdown& owner = layer >= 0 && static_cast<size_t>(layer) < stats.layers.size()
                                  ? stats.layers[static_cast<size_t>(layer)].cycles
                                  : stats.host_io;
      stats.cycles.*bucket += len;
      owner.*bucket += len;
      if (part) {
        stats.cycles.*part += len;
        owner.*part += len;
      }
    }
  }

  Accelerator& acc_;
  RunStats& stats_;
  const bool consume_;
  std::array<std::vector<Interval>, kLogs> pending_;
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

std::vector<UnitTrack> collect_tracks(const std::vector<compiler::Opcode>& ops, const Accelerator& acc) {
  auto opname = [&](int32_t idx) {
    return idx >= 0 ? std::string(compiler::opcode_name(ops[static_cast<size_t>(idx)])) : std::string("busy");
  };
  auto track = [](std::string unit, const std::vector<Interval>& v, auto name_of) {
    UnitTrack t{std::move(unit), {}};
    t.events.reserve(v.size());
    for (const auto& i : v) t.events.push_back(TraceEvent{i.begin, i.end, name_of(i), i.layer, i.instruction});
    return t;
  };
  std::vector<UnitTrack> tracks;
  tracks.push_back(track("controller", acc.controller.log().intervals(), [](const Interval& i) {
    return std::string(models::kind_name(models::Controller::kKindNames, i.kind));
  }));
  tracks.push_back(track("host_dma", acc.dma.log().intervals(), [&](const Interval& i) { return opname(i.instruction); }));
  tracks.push_back(track("pcie", acc.pcie.server().log().intervals(), [](const Interval&) { return std::string("transfer"); }));
  tracks.push_back(track("weight_memory", acc.weight_memory->busy_log().intervals(),
                         [](const Interval&) { return std::string("read"); }));
  tracks.push_back(track("weight_fifo", acc.fetcher.log().intervals(), [](const Interval& i) {
    return std::string(models::kind_name(models::WeightFetcher::kKindNames, i.kind));
  }));
  tracks.push_back(track("array", acc.matrix.log().intervals(), [](const Interval& i) {
    return std::string(models::kind_name(models::MatrixUnit::kKindNames, i.kind));
  }));
  tracks.push_back(track("vector_unit", acc.vector.log().intervals(), [&](const Interval& i) { return opname(i.instruction); }));
  return tracks;
}

}  // namespace

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
  models::CompletionTracker tracker;
  models::UnitContext ctx{arch.array,      arch.unified_buffer, arch.vector_unit, arch.controller,
                          arch.weight_memory, program,            clock,            tracker,
                          arch.ideal_memory};
  auto top = std::make_unique<Accelerator>("tessera", arch, ctx);
  // The unified-buffer ports' intervals are read by nothing; those of the host DMA, the
  // weight fetcher and weight memory only by a trace. The cycle breakdown (classify) reads
  // the array, drain, controller, PCIe and vector-unit logs.
  top->ub.read.keep_intervals(false);
  top->ub.write.keep_intervals(false);
  if (!options.tracks) {
    top->dma.keep_intervals(false);
    top->fetcher.keep_intervals(false);
    top->weight_memory->keep_intervals(false);
  }
  RunStats stats;
  stats.clock_mhz = arch.clock_mhz;
  stats.instructions = static_cast<int64_t>(program.instructions.size());
  stats.layers.resize(program.layers.size());
  // Without a trace, the breakdown's logs store runs of intervals it cannot tell apart as
  // one, and the breakdown classifies the cycles behind the units every
  // SimulateOptions::breakdown_every_instructions instructions, up to the earliest cycle a
  // unit may still log.
  Breakdown breakdown(*top, stats, !options.tracks);
  if (!options.tracks) {
    coalesce_breakdown_logs(*top);
    top->controller.on_issue(
        [&](int64_t issue_cycle) {
          const int64_t now = clock.now();
          const int64_t low = std::min({issue_cycle, top->matrix.low_water(now), top->vector.low_water(now)});
          breakdown.advance(low);
          // The unified-buffer ports are reserved by the array and the vector unit for their
          // instructions, which begin no earlier than their low-water marks.
          top->ub.read.forget_before(low);
          top->ub.write.forget_before(low);
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
  if (!top->controller.finished()) {
    throw std::logic_error("engine: simulation stalled before the program's halt (deadlock in the unit models)");
  }

  tracker.retire_all();
  const int64_t total = std::max(top->controller.end_cycle(), tracker.last_finish());
  const auto& layer_times = tracker.layer_times();
  for (size_t l = 0; l < layer_times.size() && l < stats.layers.size(); ++l) {
    stats.layers[l].first_dispatch_cycle = layer_times[l].first_dispatch_cycle;
    stats.layers[l].last_finish_cycle = layer_times[l].last_finish_cycle;
    stats.layers[l].instructions = layer_times[l].instructions;
  }
  if (total > clock.max_cycle()) throw time_overflow();
  stats.total_cycles = total;
  breakdown.advance(total);
  // Every module's counters, wherever it sits in the hierarchy.
  for (models::StatValue& v : models::collect_stats(*top)) {
    stats.counters.push_back(Counter{std::move(v.path), std::move(v.unit), std::move(v.description), v.value});
  }
  stats.macs = stats.counter("tessera.matrix_unit.macs");
  stats.weight_memory_bytes = static_cast<uint64_t>(stats.counter("tessera.weight_memory.bytes_read"));
  stats.pcie_bytes_to_device = static_cast<uint64_t>(stats.counter("tessera.pcie.bytes_to_device"));
  stats.pcie_bytes_to_host = static_cast<uint64_t>(stats.counter("tessera.pcie.bytes_to_host"));
  stats.array_stream_cycles = stats.counter("tessera.matrix_unit.matmul_cycles");
  stats.array_busy_cycles = stats.array_stream_cycles + stats.counter("tessera.matrix_unit.input_stall_cycles");
  stats.weight_memory_busy_cycles = stats.counter("tessera.weight_memory.busy_cycles");
  stats.pcie_busy_cycles = stats.counter("tessera.pcie.busy_cycles");
  stats.vector_busy_cycles = stats.counter("tessera.vector_unit.busy_cycles");
  stats.weight_fifo_full_cycles = stats.counter("tessera.weight_fetcher.fifo_full_cycles");
  if (options.tracks) {
    // Each instruction's opcode, read from the program once (one byte each): the tracks name
    // the host DMA's and the vector unit's intervals by it.
    std::vector<compiler::Opcode> ops;
    ops.reserve(program.instructions.size());
    for (const auto& in : program.instructions) ops.push_back(in.op);
    stats.tracks = collect_tracks(ops, *top);
  }
  return stats;
}

}  // namespace tessera::engine

