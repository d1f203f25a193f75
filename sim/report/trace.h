#pragma once
// Timeline traces in the Chrome trace-event format (chrome://tracing, ui.perfetto.dev):
// one thread per unit track of the run (controller, host_dma, pcie, weight_memory,
// weight_fifo, array, vector_unit), a complete event ("ph": "X") per busy interval with
// ts/dur in microseconds, and each layer's span [first dispatch, last finish) as an
// async event on a "layers" track. Deterministic: same run, byte-identical text.
#include <string>

#include "sim/compiler/compiled.h"
#include "sim/engine/engine.h"

namespace tessera::report {

std::string chrome_trace_json(const engine::RunStats& stats, const compiler::Program& program, double clock_mhz);

}  // namespace tessera::report
