#pragma once
// What the units of one core share: their parameters, program, clock, completion times,
// the chip's barrier and the unified-buffer ports.
#include "models/array/params.h"
#include "models/common/bandwidth_server.h"
#include "models/common/clock.h"
#include "models/isa/program.h"
#include "models/memory/params.h"
#include "models/units/chip_barrier.h"
#include "models/units/completion_tracker.h"
#include "models/units/params.h"

namespace tessera::models {

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

// Unified buffer ports as servers (the array, vector unit and DMA share them).
struct UnifiedBufferPorts {
  BandwidthServer read;
  BandwidthServer write;
};

}  // namespace tessera::models
