// Tensor and initializer decoding: raw little-endian bytes, the typed repeated fields,
// and external data (bounded by the model's decode budget).
#include <cmath>
#include <cstring>
#include <fstream>

#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

std::vector<float> constant_values(const Value& v) {
  std::vector<float> out;
  if (!v.has_data) return out;
  if (v.is_float) {
    for (double f : v.floats) out.push_back(static_cast<float>(f));
    return out;
  }
  for (const Sym& i : v.ints) {
    if (i.p != 0) return {};  // carries the batch: not a plain constant
    out.push_back(static_cast<float>(i.v));
  }
  return out;
}

bool is_float_type(int32_t t) {
  return t == onnx::TensorProto_DataType_FLOAT || t == onnx::TensorProto_DataType_DOUBLE ||
         t == onnx::TensorProto_DataType_FLOAT16 || t == onnx::TensorProto_DataType_BFLOAT16 ||
         t == kOnnxFloat8E4m3fn || t == kOnnxFloat8E5m2;
}

std::optional<Dtype> code_dtype(int32_t t) {
  switch (t) {
    case onnx::TensorProto_DataType_INT8: return Dtype::kInt8;
    case onnx::TensorProto_DataType_UINT8: return Dtype::kUint8;
    case onnx::TensorProto_DataType_INT16: return Dtype::kInt16;
    case kOnnxFloat8E4m3fn: return Dtype::kFp8E4m3;
    case kOnnxFloat8E5m2: return Dtype::kFp8E5m2;
    default: return std::nullopt;  // INT4 only as weights: weight_codes
  }
}

int64_t elem_size(int32_t t) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT: return 4;
    case onnx::TensorProto_DataType_UINT8:
    case onnx::TensorProto_DataType_INT8:
    case onnx::TensorProto_DataType_BOOL: return 1;
    case onnx::TensorProto_DataType_UINT16:
    case onnx::TensorProto_DataType_INT16:
    case onnx::TensorProto_DataType_FLOAT16:
    case onnx::TensorProto_DataType_BFLOAT16: return 2;
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_UINT32: return 4;
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_UINT64:
    case onnx::TensorProto_DataType_DOUBLE: return 8;
    default: return 0;
  }
}

double half_to_double(uint16_t h, bool bf16) {
  if (bf16) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = exp == 0 ? std::ldexp(mant, -24) : exp == 31 ? INFINITY : std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

// Decodes little-endian raw bytes of `n` elements of type `t`.
void decode_raw(const char* p, int64_t n, int32_t t, std::vector<Sym>& ints, std::vector<double>& floats) {
  const int64_t sz = elem_size(t);
  for (int64_t i = 0; i < n; ++i, p += sz) {
    switch (t) {
      case onnx::TensorProto_DataType_FLOAT: { float f; std::memcpy(&f, p, 4); floats.push_back(f); break; }
      case onnx::TensorProto_DataType_DOUBLE: { double d; std::memcpy(&d, p, 8); floats.push_back(d); break; }
      case onnx::TensorProto_DataType_FLOAT16:
      case onnx::TensorProto_DataType_BFLOAT16: {
        uint16_t h; std::memcpy(&h, p, 2);
        floats.push_back(half_to_double(h, t == onnx::TensorProto_DataType_BFLOAT16));
        break;
      }
      case onnx::TensorProto_DataType_UINT8:
      case onnx::TensorProto_DataType_BOOL: ints.push_back({static_cast<uint8_t>(*p), 0}); break;
      case onnx::TensorProto_DataType_INT8: ints.push_back({static_cast<int8_t>(*p), 0}); break;
      case onnx::TensorProto_DataType_UINT16: { uint16_t v; std::memcpy(&v, p, 2); ints.push_back({v, 0}); break; }
      case onnx::TensorProto_DataType_INT16: { int16_t v; std::memcpy(&v, p, 2); ints.push_back({v, 0}); break; }
      case onnx::TensorProto_DataType_INT32: { int32_t v; std::memcpy(&v, p, 4); ints.push_back({v, 0}); break; }
      case onnx::TensorProto_DataType_UINT32: { uint32_t v; std::memcpy(&v, p, 4); ints.push_back({v, 0}); break; }
      case onnx::TensorProto_DataType_INT64: { int64_t v; std::memcpy(&v, p, 8); ints.push_back({v, 0}); break; }
      case onnx::TensorProto_DataType_UINT64: { uint64_t v; std::memcpy(&v, p, 8); ints.push_back({static_cast<int64_t>(v), 0}); break; }
      default: break;
    }
  }
}

// External data must be a regular file inside the model's directory, as onnxruntime
// requires: a relative location without '..' whose real path (symlinks resolved) stays
// under the directory. Otherwise a downloaded model could read any file of the user.
// Messages quote the location (the model's own text), never bytes of the file.
std::filesystem::path TensorReader::external_file(const std::string& what, const std::string& location) const {
  namespace fs = std::filesystem;
  if (location.empty()) fail(what + " is stored as external data but names no location");
  const std::string shown = "'" + utf8_safe(location) + "'";
  if (location.find('\0') != std::string::npos) fail(what + ": its external data location " + shown + " contains a NUL byte (corrupt file?)");
  const fs::path rel(location);
  bool up = false;
  for (const auto& part : rel) up = up || part == "..";
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory() || up) {
    fail(what + ": its external data location " + shown +
         " is outside the model's directory (allowed: a relative path without '..', as onnxruntime requires)");
  }
  std::error_code ec;
  const fs::path dir = fs::canonical(path_.parent_path().empty() ? fs::path(".") : path_.parent_path(), ec);
  if (ec) fail(what + ": cannot resolve the model's directory (" + ec.message() + ")");
  const fs::path real = fs::weakly_canonical(dir / rel, ec);
  if (ec) fail(what + ": its external data file " + shown + " cannot be read (" + ec.message() + ")");
  // Inside means: `dir` is a prefix of `real`, component by component (symlinks resolved).
  auto r = real.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++r) {
    if (r == real.end() || *r != *d) {
      fail(what + ": its external data location " + shown +
           " resolves (through a symbolic link) to a file outside the model's directory (allowed: files inside it)");
    }
  }
  if (!fs::exists(real, ec)) fail(what + ": its external data file " + shown + " cannot be read (No such file or directory)");
  if (!fs::is_regular_file(real, ec)) fail(what + ": its external data location " + shown + " is not a regular file");
  return real;
}

void TensorReader::read(const onnx::TensorProto& t, Value& v, bool need, const std::string& what) {
  if (t.dims_size() > kMaxRank) {
    fail(what + " has rank " + std::to_string(t.dims_size()) + " (at most " + std::to_string(kMaxRank) + ")");
  }
  // Corrupt dims must not overflow the element count (n * 8 bytes stays in int64).
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > kMaxTensorElements / d)) {
      fail(what + " has an invalid shape: dimension " + std::to_string(d) +
           (d < 0 ? " is negative" : " makes it larger than 2^50 elements") + " (corrupt file?)");
    }
    n *= d;
  }
  const int32_t type = t.data_type();
  v.is_float = is_float_type(type);
  // Folded constants are decoded when small; a Constant node's value (`need`) up to
  // kMaxDecodedElements: the protobuf bounds the bytes, not the decoded size.
  const bool foldable = v.is_float ? n <= kMaxFoldFloats : n <= kMaxFoldInts;
  const bool small = (foldable || (need && n <= kMaxDecodedElements)) && within_budget(n, !foldable);
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    // offset and length are decimal byte counts (the ONNX external-data convention).
    auto byte_count = [&](const std::string& key, const std::string& text) {
      const bool digits = !text.empty() && text.size() <= 18 &&
                          text.find_first_not_of("0123456789") == std::string::npos;
      if (!digits) fail(what + ": its external data " + key + " '" + text + "' is not a byte count (corrupt file?)");
      return static_cast<int64_t>(std::stoll(text));
    };
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = byte_count("offset", kv.value());
      else if (kv.key() == "length") length = byte_count("length", kv.value());
    }
    const std::filesystem::path file = external_file(what, location);
    const int64_t needed = n * elem_size(type);
    if (length >= 0 && length < needed) {
      fail(what + ": its external data length " + std::to_string(length) + " is too short for " + std::to_string(n) +
           " elements (" + std::to_string(needed) + " bytes; corrupt file?)");
    }
    const int64_t bytes = length >= 0 ? length : needed;
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    if (ec) fail(what + ": its external data file '" + utf8_safe(location) + "' cannot be read (" + ec.message() + ")");
    // Both are below 10^18: the sum cannot overflow.
    if (static_cast<uint64_t>(offset + bytes) > size) {
      fail(what + ": its external data needs bytes " + std::to_string(offset) + ".." + std::to_string(offset + bytes) +
           " of '" + utf8_safe(location) + "', which has only " + std::to_string(size) + " (truncated data file?)");
    }
    if (!small || elem_size(type) == 0) return;
    std::ifstream f(file, std::ios::binary);
    std::string buf(static_cast<size_t>(needed), '\0');
    f.seekg(offset);
    f.read(buf.data(), needed);
    if (!f) fail(what + ": cannot read its external data from '" + utf8_safe(location) + "'");
    decode_raw(buf.data(), n, type, v.ints, v.floats);
    v.has_data = true;
    return;
  }
  if (!small) return;
  if (!t.raw_data().empty()) {
    if (elem_size(type) == 0) return;
    if (static_cast<int64_t>(t.raw_data().size()) < n * elem_size(type)) {
      fail(what + " holds " + std::to_string(t.raw_data().size()) + " bytes of data for " + std::to_string(n) +
           " elements (truncated or corrupt file?)");
    }
    if (!small) return;
    decode_raw(t.raw_data().data(), n, type, v.ints, v.floats);
    v.has_data = true;
    return;
  }
  if (!small) return;
  switch (type) {
    case onnx::TensorProto_DataType_FLOAT: for (float f : t.float_data()) v.floats.push_back(f); break;
    case onnx::TensorProto_DataType_DOUBLE: for (double d : t.double_data()) v.floats.push_back(d); break;
    case onnx::TensorProto_DataType_INT64: for (int64_t i : t.int64_data()) v.ints.push_back({i, 0}); break;
    case onnx::TensorProto_DataType_UINT64:
    case onnx::TensorProto_DataType_UINT32: for (uint64_t i : t.uint64_data()) v.ints.push_back({static_cast<int64_t>(i), 0}); break;
    case onnx::TensorProto_DataType_FLOAT16:
    case onnx::TensorProto_DataType_BFLOAT16:
      for (int32_t i : t.int32_data()) v.floats.push_back(half_to_double(static_cast<uint16_t>(i), type == onnx::TensorProto_DataType_BFLOAT16));
      break;
    default: for (int32_t i : t.int32_data()) v.ints.push_back({i, 0}); break;
  }
  const int64_t got = v.is_float ? static_cast<int64_t>(v.floats.size()) : static_cast<int64_t>(v.ints.size());
  if (got == n) {
    v.has_data = true;
  } else {
    v.ints.clear();
    v.floats.clear();
  }
}

void Importer::load_initializer(const onnx::TensorProto& t, const std::string& what, const std::string& as) {
  Value v;
  for (int64_t d : t.dims()) {
    if (d < 0) fail(what + " has a negative dimension");
    v.shape.push_back({d, 0});
  }
  v.elem = t.data_type();
  v.constant = true;
  tensors_.read(t, v, false, what);
  values_[as.empty() ? t.name() : as] = std::move(v);
}

}  // namespace tessera::graph::onnx_import
