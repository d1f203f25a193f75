#pragma once
// Tensor element types. Integer types are what the reference TPU runs; later chips add
// 16-bit and 8-bit floats and 4-bit integer weights.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// fp16/bf16 are the 16-bit float modes of arrays whose mac_modes list them. uint8 is what
// quantized models (ONNX QDQ, QLinear and Integer ops) often store: an 8-bit operand that
// the array's int8 mode multiplies like int8 (MacMode lookup treats them alike).
// fp8_e4m3 is OCP 8-bit Floating Point Formats (2023) v1.0 E4M3 ("E4M3FN" in ONNX): bias
// 7, no infinities, max 448, NaN S.1111.111. fp8_e5m2 is its IEEE-like E5M2: bias 15,
// infinities, max finite 57344. int4 is signed [-8, 7], for weights only (two per byte).
// fp32 is an accumulator type (float MAC modes accumulate in it), not a tensor dtype: it is
// in no list of all_dtypes() and no name parses to it.
enum class Dtype { kInt8, kInt16, kInt32, kFp16, kBf16, kUint8, kFp8E4m3, kFp8E5m2, kInt4, kFp32 };

// Every element type, in the order errors and docs list them: the one list the
// accepted names are generated from.
inline std::span<const Dtype> all_dtypes() {
  static constexpr std::array<Dtype, 9> kAll = {Dtype::kInt4,    Dtype::kInt8,    Dtype::kUint8,
                                                Dtype::kInt16,   Dtype::kInt32,   Dtype::kFp8E4m3,
                                                Dtype::kFp8E5m2, Dtype::kFp16,    Dtype::kBf16};
  return kAll;
}

inline bool dtype_is_float(Dtype t) {
  return t == Dtype::kFp16 || t == Dtype::kBf16 || t == Dtype::kFp8E4m3 || t == Dtype::kFp8E5m2 || t == Dtype::kFp32;
}
inline bool dtype_is_fp8(Dtype t) { return t == Dtype::kFp8E4m3 || t == Dtype::kFp8E5m2; }

// int4 is a weight format (packed two per byte in memory): no activation, tensor or
// accumulator holds it.
inline bool dtype_weights_only(Dtype t) { return t == Dtype::kInt4; }

inline int64_t dtype_bits(Dtype t) {
  switch (t) {
    case Dtype::kInt4: return 4;
    case Dtype::kInt8:
    case Dtype::kUint8:
    case Dtype::kFp8E4m3:
    case Dtype::kFp8E5m2: return 8;
    case Dtype::kInt16:
    case Dtype::kFp16:
    case Dtype::kBf16: return 16;
    case Dtype::kInt32:
    case Dtype::kFp32: return 32;
  }
  return 8;
}

// Bytes of one element on its own (a lane, a register), rounded up to whole bytes: int4 is
// 1. Bytes of n elements in memory are elements_bytes(), where int4 packs two per byte.
inline int64_t dtype_bytes(Dtype t) { return (dtype_bits(t) + 7) / 8; }

// Bytes that n elements of type t occupy packed: ceil(n * bits / 8).
inline int64_t elements_bytes(Dtype t, int64_t n) { return (n * dtype_bits(t) + 7) / 8; }

inline std::string_view dtype_name(Dtype t) {
  switch (t) {
    case Dtype::kInt8: return "int8";
    case Dtype::kInt16: return "int16";
    case Dtype::kInt32: return "int32";
    case Dtype::kFp16: return "fp16";
    case Dtype::kBf16: return "bf16";
    case Dtype::kUint8: return "uint8";
    case Dtype::kFp8E4m3: return "fp8_e4m3";
    case Dtype::kFp8E5m2: return "fp8_e5m2";
    case Dtype::kInt4: return "int4";
    case Dtype::kFp32: return "fp32";
  }
  return "?";
}

inline std::optional<Dtype> parse_dtype(std::string_view s) {
  for (Dtype t : all_dtypes()) {
    if (s == dtype_name(t)) return t;
  }
  return std::nullopt;
}

// The element types a matrix operand (a precision policy, a graph's dtype:, weight_dtype:,
// an energy pair) may name: every type but int32, which only accumulators and a model's
// own int32 tensors hold. Activations exclude the weights-only int4 as well.
inline std::vector<Dtype> operand_dtypes(bool weights) {
  std::vector<Dtype> out;
  for (Dtype t : all_dtypes()) {
    if (t == Dtype::kInt32 || (!weights && dtype_weights_only(t))) continue;
    out.push_back(t);
  }
  return out;
}

// "int4, int8, uint8, ..." for error messages and docs.
inline std::string dtype_names_text(const std::vector<Dtype>& types) {
  std::string s;
  for (Dtype t : types) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

// An operand dtype by name, or nullopt when `s` is not one (int32 included).
inline std::optional<Dtype> parse_operand_dtype(std::string_view s) {
  const auto t = parse_dtype(s);
  if (!t || *t == Dtype::kInt32) return std::nullopt;
  return t;
}

}  // namespace tessera
