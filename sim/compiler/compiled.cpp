#include "sim/compiler/compiled.h"

#include <sstream>

namespace tessera::compiler {

namespace {

void header(std::ostringstream& s, const CompiledWorkload& p) {
  s << "# program for workload '" << p.workload << "' on '" << p.arch << "', batch " << p.batch;
  if (p.sub_batch < p.batch) s << " in passes of " << p.sub_batch << " (the batch does not fit the unified buffer)";
  s << "\n";
  s << "# " << p.instructions.size() << " instructions, " << p.layers.size() << " layers, unified buffer peak "
    << p.ub_peak_bytes << " bytes" << (p.scratchpads > 1 ? " per core (" + std::to_string(p.scratchpads) + " scratchpads, one layout)" : "")
    << ", weight memory reads " << p.weight_bytes_read << " bytes\n";
  if (p.host_weight_bytes > 0) {
    s << "# weights in host memory: " << p.host_weight_bytes
      << " bytes of those reads cross PCIe instead (read_weights from=host)\n";
  }
  if (p.core_copy_bytes_out + p.core_copy_bytes_in > 0) {
    s << "# between the cores' scratchpads through device memory: " << p.core_copy_bytes_out << " bytes written, "
      << p.core_copy_bytes_in << " bytes read (operand panels and results of split layers)\n";
  }
  if (p.spill_bytes_out + p.spill_bytes_in > 0) {
    s << "# spills to host memory over PCIe: " << p.spill_bytes_out << " bytes out, " << p.spill_bytes_in
      << " bytes in (transfers marked 'spill')\n";
  }
}

std::string layer_name(const CompiledWorkload& p, int32_t layer) {
  return layer >= 0 && static_cast<size_t>(layer) < p.layers.size() ? p.layers[static_cast<size_t>(layer)].name
                                                                     : std::string("-");
}

// The compact form of `items`, the first starting at instruction `start`: an instruction
// template per line (its index in the expanded program when the line is not inside a
// repeat), `repeat N {` ... `}` around repeated bodies; a template inside repeats ends with
// its stride per enclosing repeat, innermost first ("step ub=+32 | step dram=+131072"),
// "step 0" where a repeat leaves it unchanged.
void compact_items(std::ostringstream& s, const CompiledWorkload& p, const std::vector<isa::InstructionStream::Item>& items,
                   uint64_t start, std::vector<std::pair<const isa::InstructionStream::Loop*, uint32_t>>& enclosing,
                   int32_t& last_layer) {
  const std::string indent(2 * enclosing.size(), ' ');
  uint64_t at = start;
  for (const auto& item : items) {
    if (item.loop == nullptr) {
      if (enclosing.empty() && item.in.layer != last_layer) {
        s << "# layer " << layer_name(p, item.in.layer) << "\n";
        last_layer = item.in.layer;
      }
      s << (enclosing.empty() ? std::to_string(at) : std::string()) << "\t" << indent << item.in.text();
      for (size_t e = enclosing.size(); e-- > 0;) {
        const isa::Stride& st = enclosing[e].first->stride[enclosing[e].second];
        s << (e + 1 == enclosing.size() ? "\t; step" : " | step");
        if (st.zero()) s << " 0";
        for (int f = 0; f < isa::Stride::kFields; ++f) {
          const int64_t d = st.d[static_cast<size_t>(f)];
          if (d != 0) s << " " << isa::Stride::field_name(f) << "=" << (d > 0 ? "+" : "") << d;
        }
      }
      s << "\n";
      for (auto& e : enclosing) e.second++;
    } else {
      if (enclosing.empty() && item.loop->body.size() > 0) {
        // The layer of the repeat's first instruction.
        const isa::InstructionStream::Item* first = &item;
        while (first->loop != nullptr) first = &first->loop->body[0];
        if (first->in.layer != last_layer) {
          s << "# layer " << layer_name(p, first->in.layer) << "\n";
          last_layer = first->in.layer;
        }
      }
      s << (enclosing.empty() ? std::to_string(at) : std::string()) << "\t" << indent << "repeat " << item.loop->count
        << " {  # " << item.size << " instructions\n";
      // The templates inside count on in the enclosing repeats' numbering (depth first).
      enclosing.emplace_back(item.loop.get(), 0);
      compact_items(s, p, item.loop->body, at, enclosing, last_layer);
      enclosing.pop_back();
      s << "\t" << indent << "}\n";
    }
    at += item.size;
  }
}

}  // namespace

std::string CompiledWorkload::listing() const {
  std::ostringstream s;
  header(s, *this);
  int last_layer = -2;
  size_t i = 0;
  for (const Instruction& in : instructions) {
    if (in.layer != last_layer) {
      s << "# layer " << (in.layer >= 0 ? layers[in.layer].name : std::string("-")) << "\n";
      last_layer = in.layer;
    }
    s << i++ << "\t" << in.text() << "\n";
  }
  return s.str();
}

std::string CompiledWorkload::compact_listing() const {
  std::ostringstream s;
  header(s, *this);
  s << "# compact form: " << instructions.items().size() << " entries, " << instructions.templates()
    << " instruction templates, " << instructions.repeats()
    << " repeats (tessera compile --expand lists every instruction)\n";
  std::vector<std::pair<const isa::InstructionStream::Loop*, uint32_t>> enclosing;
  int32_t last_layer = -2;
  compact_items(s, *this, instructions.items(), 0, enclosing, last_layer);
  return s.str();
}

}  // namespace tessera::compiler
