#pragma once
// Tensor element types. Integer types are what the reference TPU runs; the
// precision issue adds 16-bit floats.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

// fp16/bf16 are the 16-bit float modes of arrays whose mac_modes list them. uint8 is what
// quantized models (ONNX QDQ, QLinear and Integer ops) often store: an 8-bit operand that
// the array's int8 mode multiplies like int8 (MacMode lookup treats them alike).
// fp32 is an accumulator type (float MAC modes accumulate in it), not a tensor dtype.
enum class Dtype { kInt8, kInt16, kInt32, kFp16, kBf16, kUint8, kFp32 };

inline bool dtype_is_float(Dtype t) { return t == Dtype::kFp16 || t == Dtype::kBf16 || t == Dtype::kFp32; }

inline int64_t dtype_bytes(Dtype t) {
  switch (t) {
    case Dtype::kInt8: return 1;
    case Dtype::kInt16: return 2;
    case Dtype::kInt32: return 4;
    case Dtype::kFp16: return 2;
    case Dtype::kBf16: return 2;
    case Dtype::kUint8: return 1;
    case Dtype::kFp32: return 4;
  }
  return 1;
}

inline std::string_view dtype_name(Dtype t) {
  switch (t) {
    case Dtype::kInt8: return "int8";
    case Dtype::kInt16: return "int16";
    case Dtype::kInt32: return "int32";
    case Dtype::kFp16: return "fp16";
    case Dtype::kBf16: return "bf16";
    case Dtype::kUint8: return "uint8";
    case Dtype::kFp32: return "fp32";
  }
  return "?";
}

inline std::optional<Dtype> parse_dtype(std::string_view s) {
  if (s == "int8") return Dtype::kInt8;
  if (s == "int16") return Dtype::kInt16;
  if (s == "int32") return Dtype::kInt32;
  if (s == "fp16") return Dtype::kFp16;
  if (s == "bf16") return Dtype::kBf16;
  if (s == "uint8") return Dtype::kUint8;
  if (s == "fp32") return Dtype::kFp32;
  return std::nullopt;
}

// Every element type, in a fixed order (messages and docs list them from here).
inline constexpr Dtype kAllDtypes[] = {Dtype::kInt8, Dtype::kUint8, Dtype::kInt16, Dtype::kInt32,
                                       Dtype::kFp16, Dtype::kBf16, Dtype::kFp32};
inline const auto& all_dtypes() { return kAllDtypes; }

}  // namespace tessera
