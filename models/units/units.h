#pragma once
// The accelerator's execution units, each an SC_THREAD fed by a bounded
// instruction queue from the controller. Units run their own instructions in
// order; the controller resolves dependencies between units.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/array/params.h"
#include "models/array/systolic_timing.h"
#include "models/common/bandwidth_server.h"
#include "models/common/clock.h"
#include "models/common/stats.h"
#include "models/isa/program.h"
#include "models/memory/params.h"
#include "models/memory/weight_fifo.h"
#include "models/units/activity.h"
#include "models/units/params.h"
#include "models/units/region_conflicts.h"

namespace tessera::models {

// When each instruction's results are visible; unknown until its unit decides. Held for a
// window of instructions only (issue 19: memory for what is in flight, not for the
// program): an instruction leaves the window once it and every one before it have
// finished, no later than the cycle of a dispatch; its times are then summed into its
// layer's and the run's. A query of an instruction that has left answers a cycle no later
// than the one it left at: it finished in the past, which is all a wait needs to know.
class CompletionTracker {
 public:
  static constexpr int64_t kUnknown = INT64_MAX;
  struct LayerTimes {
    int64_t first_dispatch_cycle = -1;
    int64_t last_finish_cycle = -1;
    int64_t instructions = 0;
  };
  CompletionTracker() = default;
  // `index` is the next instruction in program order (the controller dispatches in order),
  // dispatched at `cycle`, the current one.
  void dispatched(int32_t index, int64_t cycle, int32_t layer) {
    if (static_cast<int64_t>(index) != base_ + static_cast<int64_t>(window_.size())) {
      throw std::logic_error("CompletionTracker: instruction " + std::to_string(index) + " dispatched out of order");
    }
    while (!window_.empty() && window_.front().finish <= cycle) retire_front();
    window_.push_back(Entry{cycle, kUnknown, layer});
  }
  void finish_at(int32_t index, int64_t cycle) {
    entry(index).finish = cycle;
    changed_.notify(sc_core::SC_ZERO_TIME);
  }
  int64_t finish(int32_t index) const {
    if (index < base_) return retired_finish_;
    if (index >= base_ + static_cast<int64_t>(window_.size())) return kUnknown;  // not dispatched yet
    return window_[static_cast<size_t>(index - base_)].finish;
  }
  // The dispatch cycle of an instruction in the window; -1 before it is dispatched.
  int64_t dispatch(int32_t index) const {
    if (index >= base_ + static_cast<int64_t>(window_.size())) return -1;
    return entry(index).dispatch;
  }
  const sc_core::sc_event& changed() const { return changed_; }
  // After the run: every instruction leaves; then the sums are complete.
  void retire_all() {
    while (!window_.empty()) retire_front();
  }
  // Per layer (by index): first dispatch, last finish and instruction count of those that
  // left; and the latest finish of all of them (kUnknown if one never finished).
  const std::vector<LayerTimes>& layer_times() const { return layers_; }
  int64_t last_finish() const { return last_finish_; }
  size_t window_size() const { return window_.size(); }

  // Instructions of another unit that `index` must wait for in its own unit, not at the
  // controller (Controller: an activate's accumulator half); taken once by that unit.
  void wait_in_unit(int32_t index, std::vector<int32_t> producers) {
    if (!producers.empty()) unit_waits_.emplace(index, std::move(producers));
  }
  std::vector<int32_t> take_unit_waits(int32_t index) {
    const auto it = unit_waits_.find(index);
    if (it == unit_waits_.end()) return {};
    std::vector<int32_t> out = std::move(it->second);
    unit_waits_.erase(it);
    return out;
  }

 private:
  struct Entry {
    int64_t dispatch;
    int64_t finish;
    int32_t layer;
  };
  const Entry& entry(int32_t index) const {
    if (index < base_ || index >= base_ + static_cast<int64_t>(window_.size())) {
      throw std::logic_error("CompletionTracker: instruction " + std::to_string(index) + " is not in flight");
    }
    return window_[static_cast<size_t>(index - base_)];
  }
  Entry& entry(int32_t index) { return const_cast<Entry&>(std::as_const(*this).entry(index)); }
  void retire_front() {
    const Entry& e = window_.front();
    if (e.layer >= 0) {
      if (static_cast<size_t>(e.layer) >= layers_.size()) layers_.resize(static_cast<size_t>(e.layer) + 1);
      LayerTimes& l = layers_[static_cast<size_t>(e.layer)];
      if (l.first_dispatch_cycle < 0 || e.dispatch < l.first_dispatch_cycle) l.first_dispatch_cycle = e.dispatch;
      l.last_finish_cycle = std::max(l.last_finish_cycle, e.finish);
      l.instructions++;
    }
    last_finish_ = std::max(last_finish_, e.finish);
    if (e.finish != kUnknown) retired_finish_ = std::max(retired_finish_, e.finish);
    window_.pop_front();
    ++base_;
  }
  std::deque<Entry> window_;  // instructions base_, base_ + 1, ...
  int64_t base_ = 0;
  int64_t retired_finish_ = 0;  // the latest finish of those that left
  int64_t last_finish_ = 0;
  std::vector<LayerTimes> layers_;
  std::unordered_map<int32_t, std::vector<int32_t>> unit_waits_;  // only instructions in flight
  sc_core::sc_event changed_;
};

// Where the cores of a chip meet at a sync: each arrives once per sync, and all leave
// when the last one has arrived (the chip template's cross-core synchronisation: a layer
// split over cores ends when every core has finished its share).
class ChipBarrier {
 public:
  explicit ChipBarrier(int cores) : cores_(cores) {}
  void arrive_and_wait() {
    const uint64_t generation = generation_;
    if (++arrived_ == cores_) {
      arrived_ = 0;
      ++generation_;
      released_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    while (generation_ == generation) sc_core::wait(released_);
  }

 private:
  int cores_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  sc_core::sc_event released_;
};

// Everything the units of one core share.
struct UnitContext {
  const ArrayConfig& array;
  const UnifiedBufferConfig& unified_buffer;
  const VectorUnitConfig& vector_unit;
  const ControllerConfig& controller;
  const WeightMemoryConfig& weight_memory;
  const isa::Program& program;  // this core's instructions
  const CoreClock& clock;
  CompletionTracker& tracker;
  bool ideal_memory = false;  // unified-buffer ports never pace a unit (ArchConfig::ideal_memory)
  ChipBarrier* barrier = nullptr;  // a chip of several cores: where their syncs meet
};

// An instruction the controller dispatched to a unit's queue: its index in the expanded
// program and the instruction itself, decoded from the compact program (issue 19) once, by
// the controller, so no unit looks instructions up by index.
struct Dispatch {
  int32_t index = -1;
  isa::Instruction in;
};
std::ostream& operator<<(std::ostream& os, const Dispatch& d);  // sc_fifo's print: the index

enum class Unit { kHostDma = 0, kWeightFetcher, kMatrix, kVector, kDeviceDma, kCount };
Unit unit_of(isa::Opcode op);

// The controller's unit queues, in order: the host DMA (if the chip has a host link), one
// weight fetcher and one matrix unit per matrix unit, the vector unit, one device DMA per
// engine. An instruction goes to the queue of its unit kind and `unit` index.
struct QueueLayout {
  int matrix_units = 1;
  int dma_engines = 0;
  bool host_dma = true;
  int host_dma_queue() const { return 0; }
  int fetcher_queue(int u) const { return 1 + u; }
  int matrix_queue(int u) const { return 1 + matrix_units + u; }
  int vector_queue() const { return 1 + 2 * matrix_units; }
  int dma_queue(int e) const { return 2 + 2 * matrix_units + e; }
  int queues() const { return 2 + 2 * matrix_units + dma_engines; }
  bool is_matrix(int q) const { return q >= matrix_queue(0) && q < matrix_queue(matrix_units); }
  // Throws std::logic_error for an instruction naming a unit the core does not have.
  int queue_of(const isa::Instruction& in) const;
};

// Unified buffer ports as servers (the array, vector unit and DMA share them).
struct UnifiedBufferPorts {
  BandwidthServer read;
  BandwidthServer write;
};

// A DMA engine between a core's scratchpad and memory outside the chip's cores: host memory
// over the PCIe link (read_host / write_host: TPU v1's host DMA) or device memory
// (dma_read / dma_write). Each transfer costs the engine's own latency (descriptor, first
// byte), then whatever its target takes.
class DmaEngine : public sc_core::sc_module, public StatProvider {
 public:
  tlm_utils::simple_initiator_socket<DmaEngine> socket;  // to the PCIe link or device memory
  sc_core::sc_fifo<Dispatch> queue;
  SC_HAS_PROCESS(DmaEngine);
  // latency_cycles per transfer; bytes_per_ns: the engine's own rate (0: the target's alone).
  DmaEngine(sc_core::sc_module_name name, UnitContext& ctx, int64_t latency_cycles = 0, double bytes_per_ns = 0);
  const IntervalLog& log() const { return log_; }
  IntervalLog& log() { return log_; }  // the cycle breakdown's access (sim/engine), for device DMA
  void keep_intervals(bool keep) { log_.keep_intervals(keep); }

 private:
  void run();
  Dispatch dispatch_;  // the instruction being run
  UnitContext& ctx_;
  int64_t latency_cycles_;
  double bytes_per_ns_;
  IntervalLog log_;
  int64_t ub_read_bytes_ = 0;   // write_host / dma_write read the scratchpad
  int64_t ub_write_bytes_ = 0;  // read_host / dma_read write it
};

class WeightFetcher : public sc_core::sc_module, public StatProvider {
 public:
  enum Kind : int32_t { kFifoFull = 0 };
  static constexpr KindNames<Kind, 1> kKindNames = {{{kFifoFull, "fifo_full"}}};
  tlm_utils::simple_initiator_socket<WeightFetcher> socket;  // to weight memory, or the host link (weights: host)
  sc_core::sc_fifo<Dispatch> queue;
  SC_HAS_PROCESS(WeightFetcher);
  WeightFetcher(sc_core::sc_module_name name, UnitContext& ctx, WeightFifo& fifo);
  const IntervalLog& log() const { return log_; }  // kFifoFull: waiting for a FIFO slot
  void keep_intervals(bool keep) { log_.keep_intervals(keep); }  // only traces read them

 private:
  void run();
  Dispatch dispatch_;  // the instruction being run
  UnitContext& ctx_;
  WeightFifo& fifo_;
  IntervalLog log_;
  int64_t tiles_ = 0;
  int64_t fifo_bytes_ = 0;
};

class MatrixUnit : public sc_core::sc_module, public StatProvider {
 public:
  enum Kind : int32_t { kActive = 0, kWeightShift, kWeightStall, kInputStall };
  static constexpr KindNames<Kind, 4> kKindNames = {
      {{kActive, "matmul"}, {kWeightShift, "weight_shift"}, {kWeightStall, "weight_stall"}, {kInputStall, "input_stall"}}};
  // Result drain after streaming ends: [stream_end, done) of each tile.
  const IntervalLog& drain_log() const { return drain_log_; }
  sc_core::sc_fifo<Dispatch> queue;
  SC_HAS_PROCESS(MatrixUnit);
  MatrixUnit(sc_core::sc_module_name name, UnitContext& ctx, WeightFifo& fifo, UnifiedBufferPorts& ub);
  const IntervalLog& log() const { return log_; }
  // The cycle breakdown's access (sim/engine: coalescing, and taking the intervals as it goes).
  IntervalLog& log() { return log_; }
  IntervalLog& drain_log() { return drain_log_; }
  int64_t macs() const { return macs_; }
  // No interval this unit logs from now on (array or drain) begins before this cycle: the
  // start of the matmul it is running (its dispatch, or when it took it, if earlier), or
  // now when it waits for one.
  int64_t low_water(int64_t now) const { return busy_since_ >= 0 ? std::min(busy_since_, now) : now; }

 private:
  void run();
  Dispatch dispatch_;  // the instruction being run
  UnitContext& ctx_;
  WeightFifo& fifo_;
  UnifiedBufferPorts& ub_;
  const array::DataflowModel& dataflow_;
  array::ArrayPipeline pipeline_;
  IntervalLog log_;
  IntervalLog drain_log_;
  int64_t busy_since_ = -1;  // see low_water
  int64_t macs_ = 0;
  int64_t tiles_ = 0;
  // Of the array's active (streaming) cycles, PE-cycles of PEs in the tile and outside it
  // (the TPU paper's Table 3 rows 2 and 3): they sum to rows x cols x matmul_cycles.
  int64_t useful_pe_cycles_ = 0;
  int64_t unused_pe_cycles_ = 0;
  std::vector<int64_t> ready_cycles_;  // the current matmul's FIFO tiles
  // Activity for the energy model (activity.h): MACs per precision pair, useful and idle.
  std::vector<std::pair<Dtype, Dtype>> pairs_;
  std::vector<int64_t> pair_macs_, pair_idle_macs_;
  int64_t register_bits_ = 0;
  int64_t ub_read_bytes_ = 0;
  int64_t accumulator_reads_ = 0;
  int64_t accumulator_writes_ = 0;
  void count(const InstructionActivity& a);
};

class VectorUnit : public sc_core::sc_module, public StatProvider {
 public:
  sc_core::sc_fifo<Dispatch> queue;
  SC_HAS_PROCESS(VectorUnit);
  VectorUnit(sc_core::sc_module_name name, UnitContext& ctx, UnifiedBufferPorts& ub);
  const IntervalLog& log() const { return log_; }  // kind: opcode
  IntervalLog& log() { return log_; }  // the cycle breakdown's access (sim/engine)
  // No interval this unit logs from now on begins before this cycle: when it took the
  // instruction it is running, or now when it waits for one.
  int64_t low_water(int64_t now) const { return busy_since_ >= 0 ? std::min(busy_since_, now) : now; }

  // Cycles one activate/vector instruction occupies the unit (without port contention).
  static int64_t compute_cycles(const VectorUnitConfig& cfg, const isa::Instruction& in);

 private:
  void run();
  Dispatch dispatch_;  // the instruction being run
  UnitContext& ctx_;
  UnifiedBufferPorts& ub_;
  IntervalLog log_;
  int64_t busy_since_ = -1;  // see low_water
  // Activity for the energy model (activity.h): element operations per function.
  std::vector<std::string_view> functions_;
  std::vector<int64_t> function_ops_;
  int64_t ub_read_bytes_ = 0;
  int64_t ub_write_bytes_ = 0;
  int64_t accumulator_reads_ = 0;
};

// Fetches instructions in order, waits for read/write-region conflicts with
// in-flight instructions of other units, and dispatches to the unit queues.
// One conflict does not hold up dispatch: an activate (any vector-unit instruction) whose
// only conflicts with in-flight matmuls are on their accumulator half is dispatched at
// once and waits in the vector unit for those matmuls' last results (the accumulators'
// double buffering: the next group's matmuls, on the other half, dispatch behind it and
// compute while this group drains and is activated).
class Controller : public sc_core::sc_module, public StatProvider {
 public:
  enum Kind : int32_t { kHazardOnHost = 0, kHazardOnCompute, kHazardOnWeights, kQueueFull, kIssue };
  static constexpr KindNames<Kind, 5> kKindNames = {{{kHazardOnHost, "wait_host"},
                                                     {kHazardOnCompute, "wait_raw"},
                                                     {kHazardOnWeights, "wait_weights"},
                                                     {kQueueFull, "queue_full"},
                                                     {kIssue, "issue"}}};
  SC_HAS_PROCESS(Controller);
  Controller(sc_core::sc_module_name name, UnitContext& ctx, std::vector<sc_core::sc_fifo<Dispatch>*> queues,
             QueueLayout layout = {});
  // No interval the controller logs from now on begins before this cycle: the issue of the
  // instruction it is working on, or now once it has finished.
  int64_t low_water(int64_t now) const { return finished_ ? now : std::min(busy_since_, now); }
  const IntervalLog& log() const { return log_; }  // instruction = the head instruction
  IntervalLog& log() { return log_; }  // the cycle breakdown's access (sim/engine)
  // Calls `f(cycle)` when it starts to issue every `every`-th instruction (from the
  // `every`-th on), at that cycle: no interval the controller logs from then on begins
  // earlier. For the cycle breakdown, which classifies the cycles behind the units as the
  // run goes (sim/engine); it must not wait or notify.
  void on_issue(std::function<void(int64_t)> f, uint32_t every) {
    on_issue_ = std::move(f);
    on_issue_every_ = every == 0 ? 1 : every;
  }
  int64_t end_cycle() const { return end_cycle_; }
  bool finished() const { return finished_; }

 private:
  // An instruction dispatched and not yet known to have finished, decoded for the hazard checks.
  struct Flight {
    int32_t index = -1;
    int unit = 0;
    isa::Instruction in;
  };
  // An in-flight instruction the one being dispatched conflicts with.
  struct Hazard {
    int32_t index;
    int spaces;  // RegionConflicts bits
    int unit;
    isa::Opcode op;
  };
  void run();
  // Steps of one instruction, in order: issue; halt or sync: wait for everything in flight
  // (a sync on a chip of several cores: also for the other cores); any other: wait for its
  // hazards, then dispatch to its unit's queue.
  void issue(const isa::Instruction& in, int32_t idx);
  void wait_for_all(const isa::Instruction& in, int32_t idx);
  void wait_for_hazards(const isa::Instruction& in, int32_t idx, int unit);
  void dispatch(const isa::Instruction& in, int32_t idx, int unit);
  UnitContext& ctx_;
  std::vector<sc_core::sc_fifo<Dispatch>*> queues_;
  QueueLayout layout_;
  IntervalLog log_;
  int64_t busy_since_ = 0;
  std::function<void(int64_t)> on_issue_;
  uint32_t on_issue_every_ = 1;
  int64_t end_cycle_ = 0;
  bool finished_ = false;
  std::vector<Flight> in_flight_;
  RegionConflicts conflicts_;
  std::vector<Hazard> hazards_;       // of the instruction being dispatched
  std::vector<int32_t> unit_waits_;   // its accumulator waits, left to the vector unit
};

}  // namespace tessera::models
