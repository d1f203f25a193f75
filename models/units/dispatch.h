#pragma once
// What the controller hands a unit, and which unit's queue it goes to.
#include <cstdint>
#include <ostream>

#include "models/isa/program.h"

namespace tessera::models {

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

}  // namespace tessera::models
