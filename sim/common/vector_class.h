#pragma once
// What kind of work a vector instruction's element operations are, so a vector unit can
// run each kind at its own rate (vector_unit.cycles_per_op in a chip config). TPU-class
// vector units do element-wise arithmetic on the lanes' ALUs every cycle, but evaluate
// transcendental functions (exp, log, reciprocal, tanh) on a separate, narrower unit and
// move data across lanes (transposes, sorts, scans) through cross-lane units
// (Norrie et al., IEEE Micro 2021, on TPUv2/v3's vector unit; Google Cloud, "TPU v6e":
// "two cross-lane units"). The class of an IR op is in its OpDef row (sim/graph/ops).
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

enum class VectorClass : uint8_t { kArithmetic, kTranscendental, kCrossLane };

inline constexpr std::array<VectorClass, 3> kAllVectorClasses = {VectorClass::kArithmetic, VectorClass::kTranscendental,
                                                                  VectorClass::kCrossLane};

inline std::string_view vector_class_name(VectorClass c) {
  switch (c) {
    case VectorClass::kArithmetic: return "arithmetic";
    case VectorClass::kTranscendental: return "transcendental";
    case VectorClass::kCrossLane: return "cross_lane";
  }
  return "arithmetic";
}

inline std::optional<VectorClass> parse_vector_class(std::string_view name) {
  for (VectorClass c : kAllVectorClasses)
    if (vector_class_name(c) == name) return c;
  return std::nullopt;
}

}  // namespace tessera
