#include "sim/report/trace.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace tessera::report {

using nlohmann::ordered_json;

std::string chrome_trace_json(const engine::RunStats& stats, const compiler::Program& program, double clock_mhz) {
  if (!(clock_mhz > 0)) throw std::invalid_argument("chrome_trace_json: clock_mhz must be > 0");
  const auto us = [clock_mhz](int64_t cycle) { return static_cast<double>(cycle) / clock_mhz; };
  const auto layer_name = [&](int32_t layer) -> ordered_json {
    if (layer >= 0 && static_cast<size_t>(layer) < program.layers.size()) return program.layers[static_cast<size_t>(layer)].name;
    return nullptr;
  };

  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const ordered_json& e) {
    if (!first) out += ",\n";
    first = false;
    out += e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  constexpr int kPid = 1;
  emit({{"name", "process_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", 0},
        {"args", {{"name", "tessera: " + program.workload + " on " + program.arch + ", batch " + std::to_string(program.batch)}}}});
  const int layers_tid = static_cast<int>(stats.tracks.size()) + 1;
  for (size_t t = 0; t < stats.tracks.size(); ++t) {
    const int tid = static_cast<int>(t) + 1;
    emit({{"name", "thread_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", {{"name", stats.tracks[t].unit}}}});
    emit({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  }
  emit({{"name", "thread_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", layers_tid}, {"args", {{"name", "layers"}}}});
  emit({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPid}, {"tid", layers_tid}, {"args", {{"sort_index", 0}}}});

  std::vector<compiler::Opcode> ops;  // by instruction index, read from the compact program once
  ops.reserve(program.instructions.size());
  for (const compiler::Instruction& in : program.instructions) ops.push_back(in.op);
  for (size_t t = 0; t < stats.tracks.size(); ++t) {
    const engine::UnitTrack& track = stats.tracks[t];
    const int tid = static_cast<int>(t) + 1;
    for (const engine::TraceEvent& ev : track.events) {
      ordered_json args;
      args["layer"] = layer_name(ev.layer);
      args["layer_index"] = ev.layer;
      args["instruction"] = ev.instruction;
      if (ev.instruction >= 0 && static_cast<size_t>(ev.instruction) < ops.size()) {
        args["opcode"] = std::string(compiler::opcode_name(ops[static_cast<size_t>(ev.instruction)]));
      }
      args["begin_cycle"] = ev.begin_cycle;
      args["end_cycle"] = ev.end_cycle;
      emit({{"name", ev.name}, {"cat", track.unit}, {"ph", "X"}, {"ts", us(ev.begin_cycle)},
            {"dur", us(ev.end_cycle - ev.begin_cycle)}, {"pid", kPid}, {"tid", tid}, {"args", args}});
    }
  }
  // Layers overlap (weights prefetch ahead, passes interleave), so they are async spans, not nested slices.
  for (size_t i = 0; i < stats.layers.size() && i < program.layers.size(); ++i) {
    const engine::LayerStats& ls = stats.layers[i];
    if (ls.first_dispatch_cycle < 0 || ls.last_finish_cycle < ls.first_dispatch_cycle) continue;
    const ordered_json args = {{"layer_index", i}, {"op", program.layers[i].op},
                               {"begin_cycle", ls.first_dispatch_cycle}, {"end_cycle", ls.last_finish_cycle}};
    emit({{"name", program.layers[i].name}, {"cat", "layer"}, {"ph", "b"}, {"id", i}, {"ts", us(ls.first_dispatch_cycle)},
          {"pid", kPid}, {"tid", layers_tid}, {"args", args}});
    emit({{"name", program.layers[i].name}, {"cat", "layer"}, {"ph", "e"}, {"id", i}, {"ts", us(ls.last_finish_cycle)},
          {"pid", kPid}, {"tid", layers_tid}});
  }
  out += "\n],\n";
  ordered_json other;
  other["workload"] = program.workload;
  other["arch"] = program.arch;
  other["batch"] = program.batch;
  other["clock_mhz"] = clock_mhz;
  other["total_cycles"] = stats.total_cycles;
  other["time_unit"] = "ts and dur in microseconds (cycle / clock_mhz)";
  out += "\"displayTimeUnit\":\"ns\",\n\"otherData\":" + other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n}\n";
  return out;
}

}  // namespace tessera::report
