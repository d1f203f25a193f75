#include "models/units/dispatch.h"

#include <stdexcept>
#include <string>

namespace tessera::models {

using isa::Instruction;
using isa::Opcode;

std::ostream& operator<<(std::ostream& os, const Dispatch& d) { return os << d.index; }

Unit unit_of(Opcode op) {
  switch (op) {
    case Opcode::kReadHost:
    case Opcode::kWriteHost: return Unit::kHostDma;
    case Opcode::kReadWeights: return Unit::kWeightFetcher;
    case Opcode::kMatmul: return Unit::kMatrix;
    case Opcode::kActivate:
    case Opcode::kVector: return Unit::kVector;
    case Opcode::kDmaRead:
    case Opcode::kDmaWrite: return Unit::kDeviceDma;
    case Opcode::kSync:
    case Opcode::kHalt: return Unit::kCount;
  }
  return Unit::kCount;
}

int QueueLayout::queue_of(const Instruction& in) const {
  const int u = static_cast<int>(in.unit);
  auto check = [&](int n, const char* what) {
    if (u >= n) {
      throw std::logic_error(std::string("controller: ") + std::string(isa::opcode_name(in.op)) + " names " + what + " " +
                             std::to_string(u) + " of " + std::to_string(n));
    }
  };
  switch (unit_of(in.op)) {
    case Unit::kHostDma:
      if (!host_dma) throw std::logic_error("controller: a host transfer on a chip with no host link");
      return host_dma_queue();
    case Unit::kWeightFetcher: check(matrix_units, "matrix unit"); return fetcher_queue(u);
    case Unit::kMatrix: check(matrix_units, "matrix unit"); return matrix_queue(u);
    case Unit::kVector: return vector_queue();
    case Unit::kDeviceDma: check(dma_engines, "DMA engine"); return dma_queue(u);
    case Unit::kCount: break;
  }
  throw std::logic_error("controller: no unit runs " + std::string(isa::opcode_name(in.op)));
}

}  // namespace tessera::models
