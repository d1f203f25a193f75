#pragma once
// What one element operation of an op costs on the vector unit, as a class of arithmetic
// (docs/energy.md): the energy tables price a class, not an op name
// (sim/config/energy_tables.h, Horowitz ISSCC 2014 per class). The class of an IR op is in
// its OpDef row (sim/graph/ops), which cannot be written without one.
#include <array>
#include <cstdint>
#include <string_view>

namespace tessera {

enum class EnergyClass : uint8_t {
  kNoVectorWork,     // runs no element operations on the vector unit (matrix ops: priced per MAC; aliases)
  kAdd32,            // one 32-bit add: compare, select, min/max, copy, sign
  kMultiplyAdd32,    // one 32-bit multiply-add: scaling, averaging, (re)quantizing
  kFp32MultiplyAdd,  // one fp32 multiply-add: transcendental, dividing and normalizing steps
};

inline constexpr std::array<EnergyClass, 4> kAllEnergyClasses = {EnergyClass::kNoVectorWork, EnergyClass::kAdd32,
                                                                 EnergyClass::kMultiplyAdd32,
                                                                 EnergyClass::kFp32MultiplyAdd};

inline std::string_view energy_class_name(EnergyClass c) {
  switch (c) {
    case EnergyClass::kNoVectorWork: return "no_vector_work";
    case EnergyClass::kAdd32: return "add32";
    case EnergyClass::kMultiplyAdd32: return "multiply_add32";
    case EnergyClass::kFp32MultiplyAdd: return "fp32_multiply_add";
  }
  return "no_vector_work";
}

}  // namespace tessera
