#include "sim/compiler/compiled.h"

#include <sstream>

namespace tessera::compiler {

std::string CompiledWorkload::listing() const {
  std::ostringstream s;
  s << "# program for workload '" << workload << "' on '" << arch << "', batch " << batch;
  if (sub_batch < batch) s << " in passes of " << sub_batch << " (the batch does not fit the unified buffer)";
  s << "\n";
  s << "# " << instructions.size() << " instructions, " << layers.size() << " layers, unified buffer peak "
    << ub_peak_bytes << " bytes, weight memory reads " << weight_bytes_read << " bytes\n";
  if (spill_bytes_out + spill_bytes_in > 0) {
    s << "# spills to host memory over PCIe: " << spill_bytes_out << " bytes out, " << spill_bytes_in
      << " bytes in (transfers marked 'spill')\n";
  }
  int last_layer = -2;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& in = instructions[i];
    if (in.layer != last_layer) {
      s << "# layer " << (in.layer >= 0 ? layers[in.layer].name : std::string("-")) << "\n";
      last_layer = in.layer;
    }
    s << i << "\t" << in.text() << "\n";
  }
  return s.str();
}

}  // namespace tessera::compiler
