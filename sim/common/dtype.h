#pragma once
// Tensor element types. Integer types are what the reference TPU runs; the
// precision issue adds 16-bit floats.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

enum class Dtype { kInt8, kInt16, kInt32 };

inline int64_t dtype_bytes(Dtype t) {
  switch (t) {
    case Dtype::kInt8: return 1;
    case Dtype::kInt16: return 2;
    case Dtype::kInt32: return 4;
  }
  return 1;
}

inline std::string_view dtype_name(Dtype t) {
  switch (t) {
    case Dtype::kInt8: return "int8";
    case Dtype::kInt16: return "int16";
    case Dtype::kInt32: return "int32";
  }
  return "?";
}

inline std::optional<Dtype> parse_dtype(std::string_view s) {
  if (s == "int8") return Dtype::kInt8;
  if (s == "int16") return Dtype::kInt16;
  if (s == "int32") return Dtype::kInt32;
  return std::nullopt;
}

}  // namespace tessera
