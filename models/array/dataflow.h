#pragma once
#include <optional>
#include <string_view>

namespace tessera::array {

// Which operand stays put in the PEs while the others stream through.
enum class Dataflow {
  kWeightStationary,  // "ws": B (weights) held, A streams, partial sums flow down
  kOutputStationary,  // "os": C (outputs) held, A and B stream, results drained at the end
  kInputStationary,   // "is": A (inputs) held, B streams, partial sums flow down
};

inline std::string_view dataflow_name(Dataflow d) {
  switch (d) {
    case Dataflow::kWeightStationary: return "ws";
    case Dataflow::kOutputStationary: return "os";
    case Dataflow::kInputStationary: return "is";
  }
  return "?";
}

inline std::optional<Dataflow> parse_dataflow(std::string_view s) {
  if (s == "ws") return Dataflow::kWeightStationary;
  if (s == "os") return Dataflow::kOutputStationary;
  if (s == "is") return Dataflow::kInputStationary;
  return std::nullopt;
}

}  // namespace tessera::array
