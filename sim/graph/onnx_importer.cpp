#include "sim/graph/onnx_importer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "sim/common/checked_math.h"
#include "sim/common/error.h"

namespace tessera::graph {
namespace {

// ---------------------------------------------------------------- symbolic dims
// A dimension or an integer constant: v x N^p, N the batch. Shape sub-graphs
// (Shape -> Gather -> Concat -> Reshape) carry the batch through as a symbol, so the
// importer knows which axis of every tensor holds the batch.
struct Sym {
  int64_t v = 0;
  int p = 0;
  bool operator==(const Sym&) const = default;
};
using SymShape = std::vector<Sym>;

std::string sym_text(Sym s) {
  if (s.p == 0) return std::to_string(s.v);
  const std::string n = s.p == 1 ? "N" : "N^" + std::to_string(s.p);
  return s.v == 1 ? n : std::to_string(s.v) + "*" + n;
}

std::string sym_shape_text(const SymShape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + sym_text(s[i]);
  return out + "]";
}

bool is_one(Sym s) { return s.v == 1 && s.p == 0; }

// ---------------------------------------------------------------- checked arithmetic
// Every integer the importer computes from the file (folded constants, dimensions,
// windows, counts) goes through these: an overflow is a ShapeError, which the driver
// reports naming the node (exit 2), never a trap or undefined behaviour.
constexpr int64_t kMaxTensorElements = int64_t{1} << 50;  // any one tensor, at the bound batch
constexpr int64_t kMaxBoundDim = int64_t{1} << 24;        // a bound input dimension: the --batch cap
constexpr int kMaxBatchPower = 62;                         // N^p with N >= 2 overflows from p = 63
constexpr int64_t kMaxWindowValue = int64_t{1} << 20;
// Every shape is copied per value and per use: a rank of 10^5 (legal in the protobuf) would
// cost megabytes per value. ONNX models use ranks up to about 8.
constexpr int kMaxRank = 64;      // kernel, stride, dilation, pad: as in YAML graphs

[[noreturn]] void overflow(int64_t a, const char* op, int64_t b) {
  throw ShapeError(std::to_string(a) + " " + op + " " + std::to_string(b) + " does not fit 64 bits");
}
int64_t add64(int64_t a, int64_t b) {
  if (auto r = checked_add(a, b)) return *r;
  overflow(a, "+", b);
}
int64_t sub64(int64_t a, int64_t b) {
  if (auto r = checked_sub(a, b)) return *r;
  overflow(a, "-", b);
}
int64_t mul64(int64_t a, int64_t b) {
  if (auto r = checked_mul(a, b)) return *r;
  overflow(a, "*", b);
}
int64_t to_int64(double d, const std::string& what) {
  if (auto r = checked_to_int64(d)) return *r;
  std::ostringstream os;
  os << what << " " << d << " is not an integer that fits 64 bits";
  throw ShapeError(os.str());
}

// The extent of a dilated window: dilation * (kernel - 1) + 1 (kernel, dilation >= 1).
int64_t window_span(int64_t kernel, int64_t dilation) {
  const auto s = checked_mul(dilation, kernel - 1);
  if (!s || *s == std::numeric_limits<int64_t>::max()) {
    throw ShapeError("a window of kernel " + std::to_string(kernel) + " with dilation " + std::to_string(dilation) +
                     " does not fit 64 bits");
  }
  return *s + 1;
}

int batch_power(int a, int b) {
  const int p = a + b;
  if (p > kMaxBatchPower) throw ShapeError("a dimension grows to N^" + std::to_string(p) + " of the batch N, which does not fit 64 bits");
  return p;
}
Sym sym_mul(Sym a, Sym b) { return Sym{mul64(a.v, b.v), batch_power(a.p, b.p)}; }

int64_t eval(Sym s, int64_t batch) {
  int64_t v = s.v;
  for (int i = 0; i < s.p; ++i) {
    if (!checked_mul(v, batch)) throw ShapeError("dimension " + sym_text(s) + " at batch " + std::to_string(batch) + " does not fit 64 bits");
    v *= batch;
  }
  return v;
}

// Names from the file go into the IR, reports and JSON: bytes that are not UTF-8 are
// written as \xNN (the JSON writer rejects them), valid UTF-8 is kept as it is.
std::string utf8_safe(const std::string& s) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xc0) == 0x80;
    if (ok && len > 1) {
      // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
      uint32_t cp = c & (0xff >> (len + 1));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (p[i + k] & 0x3f);
      const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= min[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (ok && c == 0) ok = false;  // NUL cuts C strings short
    if (!ok) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
      ++i;
      continue;
    }
    out.append(s, i, len);
    i += len;
  }
  return out;
}

// A node the importer cannot map: reported together with all others.
struct Unsupported {
  std::string why;
};

enum class Layout { kNatural, kChannelsLast };

struct Value {
  SymShape shape;          // full ONNX shape, the batch as a symbol
  int32_t elem = 1;        // ONNX element type
  bool constant = true;    // weights, shape tensors: no per-sample data
  bool has_data = false;   // constant whose elements are known
  bool is_float = false;
  std::vector<Sym> ints;       // integer data (may carry the batch)
  std::vector<double> floats;  // float data
  // Activations
  int tensor = -1;  // IR tensor, in `layout`
  Layout layout = Layout::kNatural;
  int other_tensor = -1;  // the same value converted to the other layout (cached)
  int graph_input = -1;   // an ONNX graph input not yet materialised in the IR
  bool prefer_channels_last = false;  // graph input that feeds convolutions
  bool poisoned = false;  // produced by an unsupported node
  std::string producer;   // node name (for messages)
};

// A constant's elements as floats (for functional mode); empty when not known.
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

constexpr int64_t kMaxFoldInts = 1 << 16;
constexpr int64_t kMaxFoldFloats = 1 << 12;
// A Constant node's value is decoded up to this many elements (functional mode's scales
// and biases); beyond it only its shape is kept, so a large tensor costs no memory.
constexpr int64_t kMaxDecodedElements = int64_t{1} << 22;
constexpr int64_t kMaxDecodeBudget = int64_t{1} << 23;  // decoded constants of a model together (<= 128 MiB)

bool is_float_type(int32_t t) {
  return t == onnx::TensorProto_DataType_FLOAT || t == onnx::TensorProto_DataType_DOUBLE ||
         t == onnx::TensorProto_DataType_FLOAT16 || t == onnx::TensorProto_DataType_BFLOAT16;
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

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string ints_text(const std::vector<int64_t>& v) { return shape_text(v); }

}  // namespace

namespace {

class Importer {
 public:
  Importer(std::filesystem::path path, const OnnxOptions& opts, OnnxImportInfo* info)
      : path_(std::move(path)), file_(path_.string()), opts_(opts), info_(info) {}

  Graph run();
  static std::vector<std::string> supported_op_types();  // the handler table's keys, sorted

 private:
  using Node = onnx::NodeProto;

  // ---- messages
  [[noreturn]] void fail(const std::string& msg) const { throw InputError(file_ + ": " + msg); }
  std::string where(const Node& n) const {
    return "node '" + utf8_safe(node_name(n)) + "' (" + utf8_safe(n.op_type()) + ")";
  }
  [[noreturn]] void fail_node(const Node& n, const std::string& msg) const { fail(where(n) + ": " + msg); }
  static std::string node_name(const Node& n) { return n.name().empty() ? (n.output_size() ? n.output(0) : "?") : n.name(); }

  // ---- model reading
  void read_model();
  void load_initializer(const onnx::TensorProto& t, const std::string& what);
  void read_tensor_data(const onnx::TensorProto& t, Value& v, bool need, const std::string& what);
  std::filesystem::path external_file(const std::string& what, const std::string& location) const;
  void bind_inputs();
  std::vector<const Node*> topo_order();

  // ---- values
  Value& val(const Node& n, int i);          // input i (must exist)
  bool has_input(const Node& n, int i) const { return i < n.input_size() && !n.input(i).empty(); }
  Value* opt_val(const Node& n, int i) { return has_input(n, i) ? &val(n, i) : nullptr; }
  Value& out(const Node& n, int i = 0) {
    if (i >= n.output_size()) fail_node(n, "has no output " + std::to_string(i) + " (corrupt file?)");
    return values_[n.output(i)];
  }
  int opset() const { return opset_; }

  // attributes (an attribute of another type than the op's is an error naming the node)
  const onnx::AttributeProto* attr(const Node& n, const std::string& name) const;
  const onnx::AttributeProto* typed_attr(const Node& n, const std::string& name,
                                         onnx::AttributeProto_AttributeType type) const;
  int64_t attr_i(const Node& n, const std::string& name, int64_t def) const;
  double attr_f(const Node& n, const std::string& name, double def) const;
  std::string attr_s(const Node& n, const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const Node& n, const std::string& name) const;
  bool has_attr(const Node& n, const std::string& name) const { return attr(n, name) != nullptr; }

  // constant data
  std::vector<int64_t> const_ints(const Node& n, int i, const std::string& what);  // plain ints (no batch)
  std::vector<Sym> const_syms(const Node& n, int i, const std::string& what);
  std::vector<double> const_floats(const Node& n, int i, const std::string& what);
  // opset-dependent: an attribute before `since`, an input from it on (absent: nullopt)
  std::optional<std::vector<int64_t>> ints_attr_or_input(const Node& n, const std::string& attr_name, int input,
                                                        int since);

  // ---- shapes
  int batch_axis(const SymShape& s, const Node* n) const;
  Shape per_sample(const SymShape& s) const;  // natural order, batch dropped
  bool can_channels_last(const SymShape& s) const;
  Shape ir_shape(const SymShape& s, Layout layout) const;
  std::vector<int64_t> full_dims(const SymShape& s) const;  // at the bound batch
  int64_t ir_axis(const Value& v, int64_t onnx_axis, const Node& n);  // ONNX axis -> IR axis of v's tensor

  // ---- IR building
  int tensor_in(Value& v, Layout want, const Node& n);
  int materialize_input(Value& v, Layout layout);
  int add_tensor(const std::string& name, Shape shape, Dtype dtype, int producer);
  int add_layer(const Node& n, Layer layer, const std::string& out_name, const Shape& expect, const std::string& suffix = "");
  void set_activation(Value& out, int tensor, Layout layout);
  void alias(const Node& n, Value& in, Value& o);  // o gets in's data with o.shape: reshape, no data moves
  std::string layer_name(const Node& n, const std::string& suffix) const;
  bool fusable(const std::string& value) const;  // single consumer, not a graph output, head of a matrix layer
  Layer* producer_layer(const Value& v);
  Layout preferred_layout(const Value& v) const;
  bool feeds_spatial(const std::string& value, int depth = 0) const;
  void absorb(const Node& n, const std::string& why) {
    if (info_) info_->absorbed[node_name(n)] = why;
  }

  // ---- validation shared by every op
  void check_arity(const Node& n) const;     // input and output counts the op allows
  void check_outputs(const Node& n);         // every value the node produced: dims >= 0, size bounded

  // ---- ops
  void dispatch(const Node& n);
  using Handler = std::function<void(Importer&, const Node&)>;
  static const std::map<std::string, Handler>& handler_table();
  bool all_constant(const Node& n);
  void fold_or_shape(const Node& n);  // every data input constant
  void op_conv(const Node& n, bool transposed);
  void op_gemm(const Node& n);
  void op_matmul(const Node& n);
  void op_recurrent(const Node& n, bool lstm);
  void op_batchnorm(const Node& n);
  void op_unary(const Node& n, OpKind kind);
  // Neg, Reciprocal: an element-wise op with a scalar constant `value` (the first operand when `const_first`).
  void op_with_scalar(const Node& n, OpKind kind, float value, bool const_first);
  void op_activation(const Node& n);  // Relu, Clip, Sigmoid, Tanh: fused when possible
  void op_binary(const Node& n, OpKind kind);
  void op_softmax(const Node& n);
  void op_layernorm(const Node& n);
  void op_reduce(const Node& n, OpKind kind);
  void op_pool(const Node& n, OpKind kind);
  void op_global_pool(const Node& n, OpKind kind);
  void op_reshape_like(const Node& n);  // Reshape, Flatten, Squeeze, Unsqueeze, Identity, Cast, Dropout, ...
  void op_transpose(const Node& n);
  void op_concat(const Node& n);
  void op_split(const Node& n);
  std::vector<int64_t> split_sizes(const Node& n, int64_t dim, int64_t axis);
  void op_slice(const Node& n);
  void op_gather(const Node& n);
  void op_expand(const Node& n);
  void op_pad(const Node& n);
  void op_resize(const Node& n);

  // shape inference shared by activation and constant paths
  SymShape infer_reshape(const Node& n, const SymShape& in);
  SymShape infer_shape_only(const Node& n);  // output 0 shape for ops on constants
  int slice_ir(const Node& n, Value& in, int64_t onnx_axis, int64_t begin, int64_t end, int64_t step, int tensor,
               const std::string& out_name, const std::string& suffix, Shape* ir_out);
  struct SpatialAttrs {
    std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
    std::string auto_pad;
  };
  SpatialAttrs spatial(const Node& n, size_t dims, const std::vector<int64_t>& kernel);
  void plan_padding(const Node& n, SpatialAttrs& a, const std::vector<int64_t>& in, bool transposed,
                    const std::vector<int64_t>& out_pad);

  std::filesystem::path path_;
  std::string file_;
  const OnnxOptions& opts_;
  OnnxImportInfo* info_;
  onnx::ModelProto model_;
  int opset_ = 0;
  int64_t batch_ = 1;
  Graph g_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, int> consumers_;
  std::unordered_set<std::string> graph_outputs_;
  std::unordered_set<std::string> tensor_names_;
  std::vector<std::string> tensor_head_;  // per IR tensor: the latest ONNX value it holds
  std::vector<std::pair<std::string, std::string>> unsupported_;  // node, why
  std::vector<int> input_order_;  // per IR graph input: ONNX input index
  std::unordered_map<std::string, std::vector<int64_t>> external_sizes_;
  std::unordered_map<std::string, std::vector<int>> consumer_nodes_;  // value -> indices of the nodes reading it
  // Elements of constant data decoded or folded so far: many small constants (each under
  // the fold limits) must not add up to gigabytes. Past the budget only shapes are kept.
  // Constant nodes' large values (functional mode only) have a budget of their own, so
  // they cannot starve the small shape constants that folding needs.
  int64_t decoded_elements_ = 0, decoded_large_elements_ = 0;
  bool within_decode_budget(int64_t n, bool large) {
    int64_t& used = large ? decoded_large_elements_ : decoded_elements_;
    if (n > kMaxDecodeBudget - used) return false;
    used += n;
    return true;
  }
};

// ---------------------------------------------------------------- reading

void Importer::read_model() {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) fail("cannot open the ONNX model: no such file");
  std::ifstream f(path_, std::ios::binary);
  if (!f) fail("cannot open the ONNX model for reading");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.empty()) fail("the ONNX model is empty (0 bytes)");
  if (!model_.ParseFromString(bytes)) {
    fail("not a valid ONNX model: the protobuf does not parse (truncated or corrupt file, " +
         std::to_string(bytes.size()) + " bytes)");
  }
  if (!model_.has_graph() || model_.graph().node_size() == 0) {
    fail("not a valid ONNX model: it has no graph nodes (truncated or corrupt file?)");
  }
  bool have_opset = false;
  for (const auto& o : model_.opset_import()) {
    if (!(o.domain().empty() || o.domain() == "ai.onnx")) continue;
    // Checked as int64: a huge version must not pass after truncation to int.
    const int64_t v = o.version();
    if (v < 1) fail("opset " + std::to_string(v) + " of the default domain is not a valid opset version (>= 1)");
    if (v > 21) fail("opset " + std::to_string(v) + " is newer than this importer knows (up to 21)");
    opset_ = static_cast<int>(v);
    have_opset = true;
  }
  if (!have_opset) fail("not a valid ONNX model: it declares no opset for the default domain (truncated or corrupt file?)");
}

// External data must be a regular file inside the model's directory, as onnxruntime
// requires: a relative location without '..' whose real path (symlinks resolved) stays
// under the directory. Otherwise a downloaded model could read any file of the user.
// Messages quote the location (the model's own text), never bytes of the file.
std::filesystem::path Importer::external_file(const std::string& what, const std::string& location) const {
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

void Importer::read_tensor_data(const onnx::TensorProto& t, Value& v, bool need, const std::string& what) {
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
  const bool small = (foldable || (need && n <= kMaxDecodedElements)) && within_decode_budget(n, !foldable);
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

void Importer::load_initializer(const onnx::TensorProto& t, const std::string& what) {
  Value v;
  for (int64_t d : t.dims()) {
    if (d < 0) fail(what + " has a negative dimension");
    v.shape.push_back({d, 0});
  }
  v.elem = t.data_type();
  v.constant = true;
  read_tensor_data(t, v, false, what);
  values_[t.name()] = std::move(v);
}

void Importer::bind_inputs() {
  std::unordered_set<std::string> inits;
  for (const auto& t : model_.graph().initializer()) inits.insert(t.name());
  // Where each graph input's batch axis is, from how it is consumed.
  std::unordered_map<std::string, int> batch_axis_of;
  for (const auto& n : model_.graph().node()) {
    const std::string& op = n.op_type();
    if (op == "LSTM" || op == "GRU" || op == "RNN") {
      const bool layout0 = attr_i(n, "layout", 0) == 0;
      for (int i : {0, 5, 6}) {
        if (has_input(n, i)) batch_axis_of.emplace(n.input(i), layout0 ? 1 : 0);
      }
    } else if (op == "Gemm" && attr_i(n, "transA", 0) && n.input_size() > 0) {
      batch_axis_of.emplace(n.input(0), 1);
    }
  }
  struct In {
    int idx = 0;
    const onnx::ValueInfoProto* info = nullptr;
    int rank = -1;
    int batch_axis = -1;
    std::vector<int64_t> fixed;       // > 0 where the model fixes the dim
    std::vector<std::string> params;  // dim_param names
  };
  std::vector<In> ins;
  std::set<std::string> input_names, param_names;
  const auto& ginputs = model_.graph().input();
  for (int idx = 0; idx < ginputs.size(); ++idx) {
    const auto& in = ginputs[idx];
    if (inits.count(in.name())) continue;  // an initializer listed as an input (older exporters)
    if (!in.type().has_tensor_type()) fail("graph input '" + in.name() + "' is not a tensor (sequences and maps are not supported)");
    const auto& tt = in.type().tensor_type();
    In r;
    r.idx = idx;
    r.info = &in;
    r.rank = tt.has_shape() ? tt.shape().dim_size() : -1;
    if (r.rank > kMaxRank) {
      fail("input '" + utf8_safe(in.name()) + "' has rank " + std::to_string(r.rank) + " (at most " + std::to_string(kMaxRank) + ")");
    }
    for (int d = 0; d < r.rank; ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && (dim.dim_value() < 0 || dim.dim_value() > kMaxBoundDim)) {
        fail("input '" + utf8_safe(in.name()) + "' dimension " + std::to_string(d) + " is " + std::to_string(dim.dim_value()) +
             " in the model (allowed: 1 to " + std::to_string(kMaxBoundDim) + ", the --batch cap, per dimension)");
      }
      // 0 means an empty tensor (not a dynamic dimension): -2 marks it, reported below unless bound.
      r.fixed.push_back(dim.has_dim_value() ? (dim.dim_value() > 0 ? dim.dim_value() : -2) : -1);
      r.params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
      if (!r.params.back().empty()) param_names.insert(r.params.back());
    }
    input_names.insert(in.name());
    ins.push_back(std::move(r));
  }
  // Named dimensions: bound directly (--input-shape sequence=128) or through any input
  // that has them (--input-shape input_ids=1,128 binds 'sequence' for every input).
  std::map<std::string, int64_t> param_value;
  for (const auto& [name, dims] : opts_.input_shapes) {
    if (input_names.count(name)) continue;
    if (!param_names.count(name)) {
      std::vector<std::string> names(input_names.begin(), input_names.end());
      std::vector<std::string> params(param_names.begin(), param_names.end());
      fail("--input-shape names '" + name + "', which is neither a graph input (" + join(names) + ")" +
           (params.empty() ? std::string() : " nor a named dimension (" + join(params) + ")"));
    }
    if (dims.size() != 1) fail("--input-shape " + name + " names a dimension: give one value, e.g. " + name + "=128");
    if (dims[0] < 1 || dims[0] > kMaxBoundDim) {
      fail("--input-shape " + name + "=" + std::to_string(dims[0]) + ": a dimension must be in [1, " + std::to_string(kMaxBoundDim) +
           "] (the --batch cap)");
    }
    param_value[name] = dims[0];
  }
  for (const In& r : ins) {
    auto bound = opts_.input_shapes.find(r.info->name());
    if (bound == opts_.input_shapes.end() || r.rank < 0) continue;
    for (int d = 0; d < r.rank && d < static_cast<int>(bound->second.size()); ++d) {
      const std::string& p = r.params[static_cast<size_t>(d)];
      if (p.empty()) continue;
      auto [it, fresh] = param_value.emplace(p, bound->second[static_cast<size_t>(d)]);
      if (!fresh && it->second != bound->second[static_cast<size_t>(d)]) {
        fail("--input-shape " + r.info->name() + " binds dimension '" + p + "' to " +
             std::to_string(bound->second[static_cast<size_t>(d)]) + ", but it is already bound to " + std::to_string(it->second));
      }
    }
  }

  std::map<std::string, std::vector<std::string>> unbound_named;  // param -> "input dim d"
  std::vector<std::string> unbound;
  std::string batch_from;
  bool have_batch = false;
  for (In& r : ins) {
    const std::string& name = r.info->name();
    const bool as_constant = opts_.constant_inputs.count(name) > 0;
    auto bound = opts_.input_shapes.find(name);
    if (r.rank < 0 && bound == opts_.input_shapes.end()) {
      unbound.push_back("input '" + name + "' has no shape in the model (give all of it: --input-shape " + name + "=d0,d1,...)");
      continue;
    }
    const int rk = r.rank >= 0 ? r.rank : static_cast<int>(bound->second.size());
    if (r.rank < 0) {
      r.fixed.assign(static_cast<size_t>(rk), -1);
      r.params.assign(static_cast<size_t>(rk), "");
    }
    if (bound != opts_.input_shapes.end() && static_cast<int>(bound->second.size()) != rk) {
      fail("--input-shape " + name + " gives " + std::to_string(bound->second.size()) + " dimensions, the model's input has " +
           std::to_string(rk));
    }
    const int ba = rk == 0 || as_constant ? -1 : std::min(rk - 1, batch_axis_of.count(name) ? batch_axis_of[name] : 0);
    std::vector<int64_t> dims(static_cast<size_t>(rk), -1);
    for (int d = 0; d < rk; ++d) {
      const int64_t fixed = r.fixed[static_cast<size_t>(d)];
      const std::string& param = r.params[static_cast<size_t>(d)];
      int64_t& out = dims[static_cast<size_t>(d)];
      if (bound != opts_.input_shapes.end()) {
        const int64_t want = bound->second[static_cast<size_t>(d)];
        if (want < 1 || want > kMaxBoundDim) {
          fail("--input-shape " + name + ": dimension " + std::to_string(d) + " is " + std::to_string(want) + ", must be in [1, " +
               std::to_string(kMaxBoundDim) + "] (the --batch cap)");
        }
        if (fixed > 0 && fixed != want && d != ba) {
          fail("--input-shape " + name + ": dimension " + std::to_string(d) + " is fixed to " + std::to_string(fixed) +
               " in the model, not " + std::to_string(want));
        }
        out = want;
      } else if (!param.empty() && param_value.count(param)) {
        out = param_value[param];
      } else if (fixed > 0) {
        out = fixed;
      } else if (fixed == -2 && d != ba) {
        fail("input '" + utf8_safe(name) + "' dimension " + std::to_string(d) +
             " is 0 in the model: empty tensors are not supported (if the dimension is dynamic, bind it with --input-shape " +
             utf8_safe(name) + "=d0,d1,...)");
      } else if (d == ba) {
        out = 1;  // a dynamic batch defaults to 1 (--batch sets the run's batch)
      } else if (!param.empty()) {
        unbound_named[param].push_back("'" + name + "' dim " + std::to_string(d));
      } else {
        unbound.push_back("input '" + name + "' dimension " + std::to_string(d) + " (unnamed)");
      }
    }
    int64_t elements = 1;
    for (int64_t d : dims) {
      if (d > 0 && !checked_mul(elements, d)) elements = kMaxTensorElements + 1;
      else if (d > 0) elements *= d;
    }
    if (elements > kMaxTensorElements) {
      fail("input '" + utf8_safe(name) + "' " + shape_text(dims) + " has more than 2^50 elements (at most " +
           std::to_string(kMaxTensorElements) + ")");
    }
    Value v;
    v.elem = r.info->type().tensor_type().elem_type();
    v.is_float = is_float_type(v.elem);
    if (ba < 0) {
      v.constant = true;
      for (int64_t d : dims) v.shape.push_back({std::max<int64_t>(d, 1), 0});
    } else {
      v.constant = false;
      v.graph_input = r.idx;
      v.prefer_channels_last = rk >= 3 && ba == 0 && feeds_spatial(name);
      for (int d = 0; d < rk; ++d) v.shape.push_back(d == ba ? Sym{1, 1} : Sym{std::max<int64_t>(dims[static_cast<size_t>(d)], 1), 0});
      const int64_t b = dims[static_cast<size_t>(ba)];
      if (b > 0) {
        if (have_batch && b != batch_) {
          fail("graph inputs disagree on the batch: '" + batch_from + "' has " + std::to_string(batch_) + ", '" + name +
               "' has " + std::to_string(b) + " (the batch is the first dimension of every input)");
        }
        batch_ = b, have_batch = true, batch_from = name;
      }
    }
    values_[name] = std::move(v);
  }
  for (const auto& [param, where] : unbound_named) {
    unbound.push_back("'" + param + "' (" + join(where) + ")");
  }
  if (!unbound.empty()) {
    fail("dynamic dimension(s) left unbound: " + join(unbound, "; ") +
         ". Bind them with --input-shape INPUT=d0,d1,... (the first dimension is the batch) or --input-shape DIM=value "
         "for a named dimension");
  }
}

std::vector<const onnx::NodeProto*> Importer::topo_order() {
  const auto& nodes = model_.graph().node();
  // Every value has one writer (ONNX graphs are single-assignment): a second node, or a
  // node writing an initializer or graph input, would silently replace it.
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < nodes.size(); ++i) {
    for (const auto& o : nodes[i].output()) {
      if (o.empty()) continue;
      auto [it, fresh] = producer.emplace(o, i);
      if (!fresh) {
        fail("value '" + utf8_safe(o) + "' is written by two nodes: " + where(nodes[it->second]) + " and " + where(nodes[i]) +
             " (each value must have one producer)");
      }
      if (values_.count(o)) fail(where(nodes[i]) + ": writes '" + utf8_safe(o) + "', which is already an initializer or graph input");
    }
  }
  std::vector<int> state(static_cast<size_t>(nodes.size()), 0);  // 0 new, 1 visiting, 2 done
  std::vector<const Node*> order;
  order.reserve(static_cast<size_t>(nodes.size()));
  // Depth-first with an explicit stack (node, next input): a long chain listed in reverse
  // order must not recurse once per node.
  std::vector<std::pair<int, int>> stack;
  auto visit = [&](int root) {
    if (state[static_cast<size_t>(root)] == 2) return;
    state[static_cast<size_t>(root)] = 1;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      const Node& nd = nodes[i];
      if (next == nd.input_size()) {
        state[static_cast<size_t>(i)] = 2;
        order.push_back(&nd);
        stack.pop_back();
        continue;
      }
      const std::string& in = nd.input(next++);
      if (in.empty() || values_.count(in)) continue;
      auto p = producer.find(in);
      if (p == producer.end()) {
        fail(where(nd) + ": input '" + utf8_safe(in) +
             "' is not produced by any node, initializer or graph input (truncated or corrupt file?)");
      }
      const int j = p->second;
      if (state[static_cast<size_t>(j)] == 2) continue;
      if (state[static_cast<size_t>(j)] == 1) fail(where(nodes[j]) + ": the graph has a cycle");
      state[static_cast<size_t>(j)] = 1;
      stack.emplace_back(j, 0);  // invalidates i/next: the loop re-reads the top
    }
  };
  // Over the roots in file order: keeps the original order for sorted graphs.
  for (int i = 0; i < nodes.size(); ++i) visit(i);
  return order;
}

// ---------------------------------------------------------------- attributes and constants

const onnx::AttributeProto* Importer::attr(const Node& n, const std::string& name) const {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
// An attribute read as `type`: one of another type (a STRING axis, a FLOAT perm) would
// otherwise read as 0 or empty and change the op's meaning. UNDEFINED (old writers) is read.
const onnx::AttributeProto* Importer::typed_attr(const Node& n, const std::string& name,
                                                 onnx::AttributeProto_AttributeType type) const {
  const auto* a = attr(n, name);
  if (a && a->type() != type && a->type() != onnx::AttributeProto_AttributeType_UNDEFINED) {
    fail_node(n, "attribute '" + utf8_safe(name) + "' must be of type " + onnx::AttributeProto_AttributeType_Name(type) + ", got " +
                     onnx::AttributeProto_AttributeType_Name(a->type()));
  }
  return a;
}
int64_t Importer::attr_i(const Node& n, const std::string& name, int64_t def) const {
  const auto* a = typed_attr(n, name, onnx::AttributeProto_AttributeType_INT);
  return a ? a->i() : def;
}
double Importer::attr_f(const Node& n, const std::string& name, double def) const {
  const auto* a = typed_attr(n, name, onnx::AttributeProto_AttributeType_FLOAT);
  return a ? a->f() : def;
}
std::string Importer::attr_s(const Node& n, const std::string& name, const std::string& def) const {
  const auto* a = typed_attr(n, name, onnx::AttributeProto_AttributeType_STRING);
  return a ? a->s() : def;
}
std::vector<int64_t> Importer::attr_ints(const Node& n, const std::string& name) const {
  const auto* a = typed_attr(n, name, onnx::AttributeProto_AttributeType_INTS);
  if (!a) return {};
  return {a->ints().begin(), a->ints().end()};
}

Value& Importer::val(const Node& n, int i) {
  // check_arity() names the op's input counts; this guards every other path (protobuf's
  // input(i) past the end is a fatal CHECK, not an exception).
  if (i >= n.input_size()) fail_node(n, "has " + std::to_string(n.input_size()) + " input(s), input " + std::to_string(i) + " is missing");
  auto it = values_.find(n.input(i));
  if (it == values_.end()) fail_node(n, "input '" + n.input(i) + "' is not defined");
  return it->second;
}

std::vector<Sym> Importer::const_syms(const Node& n, int i, const std::string& what) {
  Value& v = val(n, i);
  if (!v.constant) {
    throw Unsupported{what + " ('" + n.input(i) + "') must be a constant, but it is computed from the activations"};
  }
  if (!v.has_data) {
    throw Unsupported{what + " ('" + n.input(i) + "') must be known to infer shapes, but it could not be folded"};
  }
  if (v.is_float) {
    std::vector<Sym> out;
    for (double d : v.floats) out.push_back({to_int64(d, what + " value"), 0});
    return out;
  }
  return v.ints;
}

std::vector<int64_t> Importer::const_ints(const Node& n, int i, const std::string& what) {
  std::vector<int64_t> out;
  for (Sym s : const_syms(n, i, what)) {
    out.push_back(eval(s, batch_));
  }
  return out;
}

std::vector<double> Importer::const_floats(const Node& n, int i, const std::string& what) {
  Value& v = val(n, i);
  if (!v.constant || !v.has_data) throw Unsupported{what + " ('" + n.input(i) + "') must be a known constant"};
  if (v.is_float) return v.floats;
  std::vector<double> out;
  for (Sym s : v.ints) out.push_back(static_cast<double>(eval(s, batch_)));
  return out;
}

std::optional<std::vector<int64_t>> Importer::ints_attr_or_input(const Node& n, const std::string& attr_name, int input,
                                                                int since) {
  if (opset_ < since) {
    if (!has_attr(n, attr_name)) return std::nullopt;
    return attr_ints(n, attr_name);
  }
  if (!has_input(n, input)) {
    if (has_attr(n, attr_name)) return attr_ints(n, attr_name);  // tolerate the older form
    return std::nullopt;
  }
  return const_ints(n, input, attr_name);
}

// ---------------------------------------------------------------- shapes

int Importer::batch_axis(const SymShape& s, const Node* n) const {
  int axis = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].p == 0) continue;
    if (s[i].p != 1 || axis >= 0) {
      const std::string msg = "shape " + sym_shape_text(s) + " mixes the batch into more than one dimension";
      if (n) throw Unsupported{msg};
      fail(msg);
    }
    axis = static_cast<int>(i);
  }
  return axis;
}

Shape Importer::per_sample(const SymShape& s) const {
  Shape out;
  const int ba = batch_axis(s, nullptr);
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<int>(i) == ba && s[i].v == 1) continue;
    out.push_back(s[i].v);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

bool Importer::can_channels_last(const SymShape& s) const {
  return s.size() >= 3 && s[0] == Sym{1, 1} && batch_axis(s, nullptr) == 0;
}

Shape Importer::ir_shape(const SymShape& s, Layout layout) const {
  if (layout == Layout::kNatural || !can_channels_last(s)) return per_sample(s);
  Shape out;
  for (size_t i = 2; i < s.size(); ++i) out.push_back(s[i].v);
  out.push_back(s[1].v);
  return out;
}

std::vector<int64_t> Importer::full_dims(const SymShape& s) const {
  std::vector<int64_t> out;
  for (Sym d : s) out.push_back(eval(d, batch_));
  return out;
}

int64_t Importer::ir_axis(const Value& v, int64_t axis, const Node& n) {
  const auto r = static_cast<int64_t>(v.shape.size());
  if (axis < -r || axis >= r) fail_node(n, "axis " + std::to_string(axis) + " is out of range for " + sym_shape_text(v.shape));
  if (axis < 0) axis += r;
  const int ba = batch_axis(v.shape, &n);
  if (axis == ba && v.shape[static_cast<size_t>(ba)].v == 1) {
    throw Unsupported{"works along the batch dimension (axis " + std::to_string(axis) + " of " + sym_shape_text(v.shape) + ")"};
  }
  if (v.layout == Layout::kChannelsLast && can_channels_last(v.shape)) {
    if (axis == 1) return r - 2;  // channels are last: IR rank is r - 1
    return axis - 2;
  }
  // Natural: batch dropped (when it is a pure batch axis).
  const bool dropped = ba >= 0 && v.shape[static_cast<size_t>(ba)].v == 1;
  return dropped && axis > ba ? axis - 1 : axis;
}

// ---------------------------------------------------------------- IR building

std::string Importer::layer_name(const Node& n, const std::string& suffix) const {
  return utf8_safe(node_name(n) + suffix);
}

int Importer::add_tensor(const std::string& name, Shape shape, Dtype dtype, int producer) {
  const std::string safe = utf8_safe(name);
  std::string unique = safe;
  for (int k = 1; tensor_names_.count(unique); ++k) unique = safe + "#" + std::to_string(k);
  tensor_names_.insert(unique);
  g_.tensors.push_back(Tensor{unique, std::move(shape), dtype, producer});
  tensor_head_.push_back(name);
  return static_cast<int>(g_.tensors.size() - 1);
}

int Importer::materialize_input(Value& v, Layout layout) {
  const auto& in = model_.graph().input(v.graph_input);
  v.layout = can_channels_last(v.shape) ? layout : Layout::kNatural;
  v.tensor = add_tensor(in.name(), ir_shape(v.shape, v.layout), opts_.activation_dtype, -1);
  g_.tensors[static_cast<size_t>(v.tensor)].integer_values = !v.is_float;
  g_.inputs.push_back(v.tensor);
  input_order_.push_back(v.graph_input);
  v.graph_input = -1;
  return v.tensor;
}

int Importer::add_layer(const Node& n, Layer layer, const std::string& out_name, const Shape& expect,
                        const std::string& suffix) {
  layer.name = layer_name(n, suffix);
  Shape shape;
  try {
    shape = infer_layer(g_, layer);
  } catch (const ShapeError& e) {
    fail_node(n, e.what());
  }
  if (!expect.empty() && shape != expect) {
    throw std::logic_error(file_ + ": " + where(n) + ": importer shape " + shape_text(expect) + " and IR shape " +
                           shape_text(shape) + " disagree for op " + std::string(op_name(layer.op)));
  }
  const int layer_index = static_cast<int>(g_.layers.size());
  layer.output = add_tensor(out_name, shape, opts_.activation_dtype, layer_index);
  if (is_matrix_op(layer.op)) layer.weight_dtype = opts_.weight_dtype;
  g_.layers.push_back(std::move(layer));
  return g_.layers.back().output;
}

void Importer::set_activation(Value& o, int tensor, Layout layout) {
  o.constant = false;
  o.has_data = false;
  o.tensor = tensor;
  o.layout = layout;
}

int Importer::tensor_in(Value& v, Layout want, const Node& n) {
  if (v.constant) fail_node(n, "internal: a constant used as an activation");
  if (v.tensor < 0 && v.graph_input >= 0) materialize_input(v, want);
  if (v.tensor < 0) fail_node(n, "internal: activation without a tensor");
  if (!can_channels_last(v.shape) || v.layout == want) return v.tensor;
  if (v.other_tensor >= 0) return v.other_tensor;
  // Convert between NCHW order ([C, H, W] per sample) and channels last ([H, W, C]).
  const Shape target = ir_shape(v.shape, want);
  const int64_t channels = v.shape[1].v;
  int64_t spatial = 1;
  for (size_t i = 2; i < v.shape.size(); ++i) spatial *= v.shape[i].v;
  const std::string base = g_.tensors[static_cast<size_t>(v.tensor)].name;
  const std::string suffix = want == Layout::kChannelsLast ? "/to_nhwc" : "/to_nchw";
  Layer l;
  l.inputs = {v.tensor};
  if (channels == 1 || spatial == 1) {
    l.op = OpKind::kReshape;  // same element order: no data moves
    l.target_shape = target;
  } else {
    l.op = OpKind::kTranspose;
    const auto r = static_cast<int64_t>(target.size());
    if (want == Layout::kChannelsLast) {
      for (int64_t i = 1; i < r; ++i) l.perm.push_back(i);  // [C, H, W] -> [H, W, C]
      l.perm.push_back(0);
    } else {
      l.perm.push_back(r - 1);  // [H, W, C] -> [C, H, W]
      for (int64_t i = 0; i < r - 1; ++i) l.perm.push_back(i);
    }
  }
  Layer named = l;
  named.name = base + suffix;
  Shape shape;
  try {
    shape = infer_layer(g_, named);
  } catch (const ShapeError& e) {
    fail_node(n, e.what());
  }
  const int layer_index = static_cast<int>(g_.layers.size());
  named.output = add_tensor(base + suffix, shape, g_.tensors[static_cast<size_t>(v.tensor)].dtype, layer_index);
  g_.layers.push_back(std::move(named));
  v.other_tensor = g_.layers.back().output;
  return v.other_tensor;
}

Layer* Importer::producer_layer(const Value& v) {
  if (v.constant || v.tensor < 0) return nullptr;
  const int p = g_.tensors[static_cast<size_t>(v.tensor)].producer;
  return p < 0 ? nullptr : &g_.layers[static_cast<size_t>(p)];
}

bool Importer::fusable(const std::string& value) const {
  auto it = values_.find(value);
  if (it == values_.end() || it->second.constant || it->second.tensor < 0) return false;
  if (graph_outputs_.count(value)) return false;
  auto c = consumers_.find(value);
  if (c == consumers_.end() || c->second != 1) return false;
  const int t = it->second.tensor;
  if (tensor_head_[static_cast<size_t>(t)] != value) return false;
  const int p = g_.tensors[static_cast<size_t>(t)].producer;
  if (p < 0) return false;
  const OpKind op = g_.layers[static_cast<size_t>(p)].op;
  return op == OpKind::kFc || op == OpKind::kConv2d || op == OpKind::kConvTranspose2d || op == OpKind::kMatmul;
}

// o holds in's elements with o.shape: a reshape (no data moves).
void Importer::alias(const Node& n, Value& in, Value& o) {
  o.constant = false;
  const Shape want = per_sample(o.shape);
  Layout layout = Layout::kNatural;
  int t = -1;
  if (in.layout == Layout::kChannelsLast && can_channels_last(in.shape) && in.tensor >= 0) {
    if (o.shape == in.shape) {
      o.tensor = in.tensor, o.layout = in.layout;
      o.other_tensor = in.other_tensor;
      const std::string& from = n.input(0);
      const bool pass = tensor_head_[static_cast<size_t>(in.tensor)] == from && consumers_[from] == 1 && !graph_outputs_.count(from);
      tensor_head_[static_cast<size_t>(in.tensor)] = pass ? n.output(0) : std::string();
      absorb(n, "alias");
      return;
    }
    const int64_t c = in.shape[1].v;
    int64_t spatial = 1;
    for (size_t i = 2; i < in.shape.size(); ++i) spatial *= in.shape[i].v;
    const bool flatten_all = want.size() == 1;  // [N, C*H*W]: the next layer's weights are permuted offline
    t = (c == 1 || spatial == 1 || flatten_all) ? in.tensor : tensor_in(in, Layout::kNatural, n);
  } else {
    t = tensor_in(in, Layout::kNatural, n);
  }
  if (can_channels_last(o.shape) && in.layout == Layout::kChannelsLast && o.shape == in.shape) layout = in.layout;
  if (g_.tensors[static_cast<size_t>(t)].shape == want) {
    o.tensor = t;
    o.layout = layout;
    // The alias inherits fusability only if it is the value's one consumer.
    const std::string& from = n.input(0);
    const bool pass = tensor_head_[static_cast<size_t>(t)] == from && consumers_[from] == 1 && !graph_outputs_.count(from);
    tensor_head_[static_cast<size_t>(t)] = pass ? n.output(0) : std::string();
    absorb(n, "alias");
    return;
  }
  Layer l;
  l.op = OpKind::kReshape;
  l.inputs = {t};
  l.target_shape = want;
  const int y = add_layer(n, l, n.output(0), want);
  set_activation(o, y, Layout::kNatural);
}

// ---------------------------------------------------------------- shape rules on symbolic shapes

SymShape broadcast_sym(const SymShape& a, const SymShape& b) {
  const size_t r = std::max(a.size(), b.size());
  SymShape out(r, Sym{1, 0});
  for (size_t i = 0; i < r; ++i) {
    const Sym da = i < r - a.size() ? Sym{1, 0} : a[i - (r - a.size())];
    const Sym db = i < r - b.size() ? Sym{1, 0} : b[i - (r - b.size())];
    if (da == db || is_one(db)) out[i] = da;
    else if (is_one(da)) out[i] = db;
    else throw ShapeError("shapes " + sym_shape_text(a) + " and " + sym_shape_text(b) + " do not broadcast");
  }
  return out;
}

int64_t norm_axis(int64_t axis, size_t rank, const std::string& what) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw ShapeError(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(r) +
                     (r > 0 ? " (allowed: " + std::to_string(-r) + " to " + std::to_string(r - 1) + ")" : std::string()));
  }
  return axis < 0 ? axis + r : axis;
}

// Flatten's axis: in [-rank, rank] (rank itself: everything in the first factor).
int64_t flatten_axis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis > r) {
    throw ShapeError("Flatten axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r) + " (allowed: " +
                     std::to_string(-r) + " to " + std::to_string(r) + ")");
  }
  return axis < 0 ? axis + r : axis;
}

// A list of axes, each in range, none repeated (the one validation path for every op's axes).
std::vector<int64_t> norm_axes(std::vector<int64_t> axes, size_t rank, const std::string& what) {
  for (int64_t& a : axes) a = norm_axis(a, rank, what);
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) throw ShapeError(what + "s repeat axis " + std::to_string(*dup) + " (each axis at most once)");
  return axes;
}

// perm must be a permutation of 0..rank-1.
void check_perm(const std::vector<int64_t>& perm, size_t rank) {
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (int64_t p : perm) {
    if (!ok) break;
    ok = p >= 0 && p < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(p)];
    if (ok) seen[static_cast<size_t>(p)] = true;
  }
  if (!ok) {
    throw ShapeError("perm " + shape_text(perm) + " is not a permutation of the " + std::to_string(rank) +
                     " axes (allowed: each of 0 to " + std::to_string(static_cast<int64_t>(rank) - 1) + " once)");
  }
}

bool all_plain(const SymShape& s) {
  return std::all_of(s.begin(), s.end(), [](Sym d) { return d.p == 0; });
}

std::vector<int64_t> plain_dims(const SymShape& s) {
  std::vector<int64_t> d;
  for (Sym x : s) d.push_back(x.v);
  return d;
}

int64_t count(const std::vector<int64_t>& d) {
  if (auto n = checked_product(d)) return *n;
  throw ShapeError("shape " + shape_text(d) + " has more elements than fit 64 bits");
}

// For every element of `out` (row-major), the flat index of the broadcast source in `in`.
std::vector<int64_t> broadcast_map(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  const size_t r = out.size();
  std::vector<int64_t> stride(r, 0);
  int64_t s = 1;
  for (size_t i = in.size(); i-- > 0;) {
    const size_t oi = i + r - in.size();
    stride[oi] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  std::vector<int64_t> map(static_cast<size_t>(count(out)));
  std::vector<int64_t> idx(r, 0);
  for (size_t k = 0; k < map.size(); ++k) {
    int64_t src = 0;
    for (size_t i = 0; i < r; ++i) src += idx[i] * stride[i];
    map[k] = src;
    for (size_t i = r; i-- > 0;) {
      if (++idx[i] < out[i]) break;
      idx[i] = 0;
    }
  }
  return map;
}

// Integer folding, exact or not at all: nullopt when the result is not a constant (it
// depends on the batch, or divides by 0); a ShapeError when it does not fit 64 bits.
// `fmod`: ONNX Mod's attribute (1: the dividend's sign, 0: the divisor's).
std::optional<Sym> sym_binary(const std::string& op, Sym a, Sym b, bool fmod = false) {
  if (op == "Add" || op == "Sub") {
    const bool add = op == "Add";
    if (a.p == b.p) return Sym{add ? add64(a.v, b.v) : sub64(a.v, b.v), a.p};
    if (b.v == 0) return a;
    if (a.v == 0) return Sym{add ? b.v : sub64(0, b.v), b.p};
    return std::nullopt;
  }
  if (op == "Mul") return sym_mul(a, b);
  if (op == "Div") {
    if (b.v == 0 || a.p < b.p || checked_rem(a.v, b.v) != 0) return std::nullopt;
    const auto q = checked_div(a.v, b.v);
    if (!q) overflow(a.v, "/", b.v);
    return Sym{*q, a.p - b.p};
  }
  if (op == "Mod") {
    if (a.p || b.p || b.v == 0) return std::nullopt;
    return Sym{*(fmod ? checked_rem(a.v, b.v) : checked_floor_mod(a.v, b.v)), 0};
  }
  if (op == "Equal") {
    if (a == b) return Sym{1, 0};
    if (a.p == b.p) return Sym{0, 0};
    if ((a.p && b.v <= 0) || (b.p && a.v <= 0)) return Sym{0, 0};  // the batch is >= 1
    return std::nullopt;
  }
  if (op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "Max" || op == "Min") {
    if (a.p != b.p) return std::nullopt;
    const bool lt = a.v < b.v, eq = a.v == b.v;
    if (op == "Less") return Sym{lt, 0};
    if (op == "Greater") return Sym{!lt && !eq, 0};
    if (op == "LessOrEqual") return Sym{lt || eq, 0};
    if (op == "GreaterOrEqual") return Sym{!lt, 0};
    if (op == "Max") return lt ? b : a;
    return lt ? a : b;
  }
  if (op == "And") return Sym{a.v && b.v, 0};
  if (op == "Or") return Sym{a.v || b.v, 0};
  if (op == "Pow") {
    if (a.p || b.p || b.v < 0) return std::nullopt;
    // Square-and-multiply: a huge exponent takes 63 steps, not b.v.
    const auto r = checked_pow(a.v, b.v);
    if (!r) overflow(a.v, "**", b.v);
    return Sym{*r, 0};
  }
  return std::nullopt;
}

std::optional<double> float_binary(const std::string& op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  if (op == "Pow") return std::pow(a, b);
  if (op == "Max") return std::max(a, b);
  if (op == "Min") return std::min(a, b);
  if (op == "Equal") return a == b ? 1.0 : 0.0;
  if (op == "Less") return a < b ? 1.0 : 0.0;
  if (op == "Greater") return a > b ? 1.0 : 0.0;
  if (op == "Mod") return std::fmod(a, b);
  return std::nullopt;
}

const std::unordered_set<std::string>& binary_fold_ops() {
  static const std::unordered_set<std::string> s = {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Equal", "Less", "Greater",
                                                   "LessOrEqual", "GreaterOrEqual", "Max", "Min", "And", "Or"};
  return s;
}
const std::unordered_set<std::string>& unary_fold_ops() {
  static const std::unordered_set<std::string> s = {"Neg", "Sqrt", "Reciprocal", "Abs", "Floor", "Ceil", "Not", "Exp",
                                                   "Relu", "Sigmoid", "Tanh", "Erf", "Log", "Round"};
  return s;
}
// Ops that keep the shape of their (first) input.
const std::unordered_set<std::string>& same_shape_ops() {
  static const std::unordered_set<std::string> s = {
      "Identity", "Cast", "CastLike", "Dropout", "DequantizeLinear", "QuantizeLinear", "Relu", "Sigmoid", "Tanh", "Erf",
      "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Round", "Not", "Clip", "LeakyRelu",
      "HardSigmoid", "HardSwish", "Gelu", "Softmax", "LogSoftmax", "BatchNormalization", "LayerNormalization", "Sign"};
  return s;
}

// Reshape target -> output shape: 0 copies the input dim (unless allowzero), -1 is inferred.
SymShape Importer::infer_reshape(const Node& n, const SymShape& in) {
  std::vector<Sym> target = const_syms(n, 1, "the target shape");
  const bool allowzero = attr_i(n, "allowzero", 0) != 0;
  SymShape out;
  int unknown = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    Sym t = target[i];
    if (t.p == 0 && t.v == 0 && !allowzero) {
      if (i >= in.size()) throw ShapeError("target shape copies dimension " + std::to_string(i) + " of a rank-" + std::to_string(in.size()) + " input");
      t = in[i];
    }
    if (t.p == 0 && t.v == -1) {
      if (unknown >= 0) throw ShapeError("target shape has more than one -1");
      unknown = static_cast<int>(i);
    } else if (t.p == 0 && t.v < 0) {
      throw ShapeError("target shape has a negative dimension " + std::to_string(t.v));
    }
    out.push_back(t);
  }
  // Element counts as symbols.
  Sym total{1, 0}, known{1, 0};
  for (Sym d : in) total = sym_mul(total, d);
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i) != unknown) known = sym_mul(known, out[i]);
  }
  if (unknown >= 0) {
    auto q = sym_binary("Div", total, known);
    if (!q) {
      // The target hard-codes the batch (e.g. 1): solve at the bound batch.
      const int64_t t = eval(total, batch_), k = eval(known, batch_);
      if (k == 0 || t % k != 0) throw ShapeError("cannot reshape " + sym_shape_text(in) + " to " + sym_shape_text(out));
      q = Sym{t / k, 0};
    }
    out[static_cast<size_t>(unknown)] = *q;
    known = sym_mul(known, *q);
  }
  if (!(known == total)) {
    // Only consistent at the bound batch: the target spells the batch out as a number.
    if (eval(known, batch_) != eval(total, batch_) || total.p != 1 || known.p != 0) {
      throw ShapeError("cannot reshape " + sym_shape_text(in) + " to " + sym_shape_text(out));
    }
    // The batch is the outer factor of the first axis, or of the first after leading 1s
    // that cannot hold it (e.g. [1, N, ...] at a batch > 1).
    size_t k = 0;
    while (k + 1 < out.size() && out[k] == Sym{1, 0} && batch_ > 1) ++k;
    if (out.empty() || out[k].p || out[k].v % batch_ != 0) {
      throw ShapeError("the target shape " + sym_shape_text(out) + " hard-codes the batch in a way that cannot be followed");
    }
    out[k] = Sym{out[k].v / batch_, 1};
  }
  return out;
}

SymShape squeeze_shape(const SymShape& in, std::vector<int64_t> axes) {
  SymShape out;
  axes = norm_axes(axes, in.size(), "squeeze axis");
  for (size_t i = 0; i < in.size(); ++i) {
    const bool listed = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (axes.empty() ? is_one(in[i]) : listed) {
      if (!is_one(in[i])) throw ShapeError("cannot squeeze axis " + std::to_string(i) + " of " + sym_shape_text(in));
      continue;
    }
    out.push_back(in[i]);
  }
  return out;
}

SymShape unsqueeze_shape(const SymShape& in, std::vector<int64_t> axes) {
  const size_t r = in.size() + axes.size();
  axes = norm_axes(axes, r, "unsqueeze axis");
  SymShape out;
  size_t k = 0;
  for (size_t i = 0; i < r; ++i) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end()) out.push_back({1, 0});
    else out.push_back(in.at(k++));
  }
  return out;
}

// Slice's starts, ends, axes and steps: one entry per sliced axis, each axis once.
void check_slice_lists(const std::vector<int64_t>& starts, const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                       const std::vector<int64_t>& steps, size_t rank) {
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    throw ShapeError("starts, ends, axes and steps must have one entry per sliced axis, got " + std::to_string(starts.size()) +
                     ", " + std::to_string(ends.size()) + ", " + std::to_string(axes.size()) + " and " +
                     std::to_string(steps.size()));
  }
  norm_axes(axes, rank, "slice axis");
}

// Slice bounds along one axis, clamped as ONNX does; returns the output length.
int64_t slice_len(int64_t dim, int64_t& b, int64_t& e, int64_t step) {
  if (step == 0) throw ShapeError("slice step 0");
  if (dim == 0) return b = e = 0;
  if (b < 0) b += dim;
  if (e < 0) e += dim;
  // ceil((e - b) / step) without overflow: e - b <= dim, and -step may not exist (INT64_MIN).
  if (step > 0) {
    b = std::clamp<int64_t>(b, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    return e > b ? 1 + (e - b - 1) / step : 0;
  }
  b = std::clamp<int64_t>(b, 0, dim - 1);
  e = std::clamp<int64_t>(e, -1, dim - 1);
  return b > e ? 1 + static_cast<int64_t>(static_cast<uint64_t>(b - e - 1) / (0 - static_cast<uint64_t>(step))) : 0;
}

// ---------------------------------------------------------------- constants

namespace {
void push_elem(const Value& v, int64_t k, Value& o) {
  if (v.is_float) o.floats.push_back(v.floats[static_cast<size_t>(k)]);
  else o.ints.push_back(v.ints[static_cast<size_t>(k)]);
}

// Strides of a row-major shape.
std::vector<int64_t> strides_of(const std::vector<int64_t>& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

bool small_enough(const SymShape& s, bool is_float) {
  if (!all_plain(s)) return false;
  for (Sym d : s) {
    if (d.v < 0) return false;
  }
  const int64_t n = count(plain_dims(s));
  return n <= (is_float ? kMaxFoldFloats : kMaxFoldInts);
}
}  // namespace

bool Importer::all_constant(const Node& n) {
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) continue;
    if (!val(n, i).constant) return false;
  }
  return true;
}

SymShape Importer::infer_shape_only(const Node& n) {
  const std::string& op = n.op_type();
  Value& x = val(n, 0);
  if (op == "MatMul") {
    SymShape a = x.shape, b = val(n, 1).shape;
    if (a.size() < 2 || b.size() < 2) throw Unsupported{"1-D MatMul operands"};
    SymShape la(a.begin(), a.end() - 2), lb(b.begin(), b.end() - 2);
    SymShape out = broadcast_sym(la, lb);
    out.push_back(a[a.size() - 2]);
    out.push_back(b.back());
    return out;
  }
  if (op == "Gemm") {
    const Value& b = val(n, 1);
    if (x.shape.size() != 2 || b.shape.size() != 2) throw ShapeError("Gemm needs 2-D operands, got " + sym_shape_text(x.shape) + " and " + sym_shape_text(b.shape));
    const Sym m = attr_i(n, "transA", 0) ? x.shape.at(1) : x.shape.at(0);
    const Sym nn = attr_i(n, "transB", 0) ? b.shape.at(0) : b.shape.at(1);
    return {m, nn};
  }
  if (op == "Tile") {
    const auto reps = const_ints(n, 1, "repeats");
    if (reps.size() != x.shape.size()) {
      throw ShapeError("repeats has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(x.shape.size()));
    }
    SymShape out = x.shape;
    for (size_t i = 0; i < out.size(); ++i) {
      if (reps[i] < 0) throw ShapeError("repeats must be >= 0, got " + std::to_string(reps[i]));
      out[i].v = mul64(out[i].v, reps[i]);
    }
    return out;
  }
  if (op.rfind("Reduce", 0) == 0) {
    std::vector<int64_t> axes;
    if (auto a = ints_attr_or_input(n, "axes", 1, op == "ReduceSum" ? 13 : 18)) axes = *a;
    const bool keep = attr_i(n, "keepdims", 1) != 0;
    SymShape out;
    axes = norm_axes(axes, x.shape.size(), "axis");
    for (size_t i = 0; i < x.shape.size(); ++i) {
      const bool r = axes.empty() || std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
      if (!r) out.push_back(x.shape[i]);
      else if (keep) out.push_back({1, 0});
    }
    return out;
  }
  throw Unsupported{"op " + op + " on constant inputs is not supported"};
}

void Importer::fold_or_shape(const Node& n) {
  const std::string& op = n.op_type();
  Value res;
  res.constant = true;
  auto finish = [&](int output = 0) {
    if (res.has_data) {
      const int64_t want = count(full_dims(res.shape));
      const int64_t got = res.is_float ? static_cast<int64_t>(res.floats.size()) : static_cast<int64_t>(res.ints.size());
      if (!all_plain(res.shape) || want != got) res.has_data = false, res.ints.clear(), res.floats.clear();
    }
    if (res.has_data && !within_decode_budget(static_cast<int64_t>(res.is_float ? res.floats.size() : res.ints.size()),
                                              res.shape.size() && !small_enough(res.shape, res.is_float))) {
      res.has_data = false, res.ints.clear(), res.floats.clear();  // the model holds too much constant data: shapes only
    }
    if (n.output_size() > output && !n.output(output).empty()) values_[n.output(output)] = res;
  };

  if (op == "Constant") {
    if (const auto* a = attr(n, "value")) {
      for (int64_t d : a->t().dims()) res.shape.push_back({d, 0});
      res.elem = a->t().data_type();
      read_tensor_data(a->t(), res, true, where(n) + " value");
    } else if (const auto* f = attr(n, "value_float")) {
      res.is_float = true, res.has_data = true, res.floats = {f->f()};
    } else if (const auto* fs = attr(n, "value_floats")) {
      res.is_float = true, res.has_data = true, res.shape = {{fs->floats_size(), 0}};
      res.floats.assign(fs->floats().begin(), fs->floats().end());
    } else if (const auto* i = attr(n, "value_int")) {
      res.has_data = true, res.ints = {{i->i(), 0}};
    } else if (const auto* is = attr(n, "value_ints")) {
      res.has_data = true, res.shape = {{is->ints_size(), 0}};
      for (int64_t v : is->ints()) res.ints.push_back({v, 0});
    } else {
      throw Unsupported{"Constant without a value, value_float(s) or value_int(s) attribute"};
    }
    absorb(n, "folded");
    return finish();
  }
  if (op == "ConstantOfShape") {
    const std::vector<Sym> dims = const_syms(n, 0, "the shape");
    for (Sym d : dims) {
      if (d.v < 0) throw ShapeError("the shape " + sym_shape_text(dims) + " has a negative dimension");
    }
    res.shape.assign(dims.begin(), dims.end());
    Value fill;
    fill.is_float = true, fill.floats = {0.0};
    if (const auto* a = attr(n, "value")) read_tensor_data(a->t(), fill, true, where(n) + " value");
    res.is_float = fill.is_float;
    if (small_enough(res.shape, res.is_float)) {
      const int64_t cnt = count(plain_dims(res.shape));
      for (int64_t k = 0; k < cnt; ++k) push_elem(fill, 0, res);
      res.has_data = true;
    }
    absorb(n, "folded");
    return finish();
  }
  if (op == "Range") {
    const Value& s = val(n, 0);
    res.is_float = s.is_float || val(n, 1).is_float || val(n, 2).is_float;
    int64_t cnt = 0;
    const std::string too_many = "Range has more than 2^50 elements (at most " + std::to_string(kMaxTensorElements) + ")";
    if (res.is_float) {
      const auto st = const_floats(n, 0, "start"), li = const_floats(n, 1, "limit"), de = const_floats(n, 2, "delta");
      if (st.size() != 1 || li.size() != 1 || de.size() != 1) throw ShapeError("start, limit and delta must be scalars");
      if (de[0] == 0) fail_node(n, "Range delta is 0");
      const double c = std::ceil((li[0] - st[0]) / de[0]);
      if (!(c <= static_cast<double>(kMaxTensorElements))) throw ShapeError(too_many);  // NaN too
      cnt = static_cast<int64_t>(std::max(0.0, c));
      if (cnt <= kMaxFoldInts) {
        for (int64_t k = 0; k < cnt; ++k) res.floats.push_back(st[0] + static_cast<double>(k) * de[0]);
        res.has_data = true;
      }
    } else {
      // Integers exactly: the count is ceil((limit - start) / delta), checked.
      const auto st = const_ints(n, 0, "start"), li = const_ints(n, 1, "limit"), de = const_ints(n, 2, "delta");
      if (st.size() != 1 || li.size() != 1 || de.size() != 1) throw ShapeError("start, limit and delta must be scalars");
      if (de[0] == 0) fail_node(n, "Range delta is 0");
      const int64_t span = sub64(li[0], st[0]);
      const auto q = checked_div(span, de[0]);
      if (!q) overflow(span, "/", de[0]);
      cnt = *q + (span % de[0] != 0 && (span > 0) == (de[0] > 0) ? 1 : 0);
      cnt = std::max<int64_t>(cnt, 0);
      if (cnt > kMaxTensorElements) throw ShapeError(too_many);
      if (cnt <= kMaxFoldInts) {
        for (int64_t k = 0; k < cnt; ++k) res.ints.push_back({add64(st[0], mul64(k, de[0])), 0});
        res.has_data = true;
      }
    }
    res.shape = {{cnt, 0}};
    absorb(n, "folded");
    return finish();
  }

  if (n.input_size() == 0 || n.input(0).empty()) throw Unsupported{"a generator op (no inputs) is not supported"};
  Value& x = val(n, 0);
  res.elem = x.elem;
  res.is_float = x.is_float;
  absorb(n, "folded");
  if (op == "Identity" || op == "Dropout" || op == "Cast" || op == "CastLike" || op == "DequantizeLinear" ||
      op == "QuantizeLinear" || unary_fold_ops().count(op) || same_shape_ops().count(op)) {
    res.shape = x.shape;
    if (op == "Cast" || op == "CastLike") {
      const int32_t to = op == "Cast" ? static_cast<int32_t>(attr_i(n, "to", 1)) : val(n, 1).elem;
      res.elem = to;
      res.is_float = is_float_type(to);
      if (x.has_data) {
        res.has_data = true;
        if (res.is_float && !x.is_float) {
          for (Sym s : x.ints) {
            if (s.p) res.has_data = false;
            res.floats.push_back(static_cast<double>(s.v));
          }
        } else if (!res.is_float && x.is_float) {
          for (double d : x.floats) {
            // NaN, infinities and values past int64 have no integer: not folded.
            const auto i = checked_to_int64(d);
            if (!i) res.has_data = false;
            res.ints.push_back({i.value_or(0), 0});
          }
        } else {
          res.ints = x.ints, res.floats = x.floats;
        }
      }
    } else if (op == "Identity" || op == "Dropout") {
      res.has_data = x.has_data, res.ints = x.ints, res.floats = x.floats;
    } else if (unary_fold_ops().count(op) && x.has_data) {
      res.has_data = true;
      if (x.is_float) {
        for (double d : x.floats) {
          double r = d;
          if (op == "Neg") r = -d;
          else if (op == "Sqrt") r = std::sqrt(d);
          else if (op == "Reciprocal") r = 1.0 / d;
          else if (op == "Abs") r = std::fabs(d);
          else if (op == "Floor") r = std::floor(d);
          else if (op == "Ceil") r = std::ceil(d);
          else if (op == "Round") r = std::nearbyint(d);
          else if (op == "Exp") r = std::exp(d);
          else if (op == "Log") r = std::log(d);
          else if (op == "Relu") r = std::max(0.0, d);
          else if (op == "Sigmoid") r = 1.0 / (1.0 + std::exp(-d));
          else if (op == "Tanh") r = std::tanh(d);
          else if (op == "Erf") r = std::erf(d);
          else if (op == "Not") r = d == 0;
          res.floats.push_back(r);
        }
      } else {
        for (Sym s : x.ints) {
          if (op == "Neg") res.ints.push_back({sub64(0, s.v), s.p});
          else if (op == "Abs") res.ints.push_back({s.v < 0 ? sub64(0, s.v) : s.v, s.p});
          else if (op == "Not") res.ints.push_back({s.v == 0, 0});
          else if (op == "Relu") res.ints.push_back({std::max<int64_t>(0, s.v), s.p});
          else if (op == "Floor" || op == "Ceil" || op == "Round") res.ints.push_back(s);
          else res.has_data = false;
        }
      }
    }
    for (int i = 1; i < n.output_size(); ++i) {  // e.g. Dropout's mask
      if (!n.output(i).empty()) {
        Value extra;
        extra.shape = res.shape;
        values_[n.output(i)] = extra;
      }
    }
    return finish();
  }
  if (binary_fold_ops().count(op)) {
    const Value& y = val(n, 1);
    res.shape = broadcast_sym(x.shape, y.shape);
    const bool cmp = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
                     op == "And" || op == "Or";
    res.is_float = !cmp && (x.is_float || y.is_float);
    if (x.has_data && y.has_data && small_enough(res.shape, res.is_float)) {
      const auto od = plain_dims(res.shape);
      const auto mx = broadcast_map(plain_dims(x.shape), od), my = broadcast_map(plain_dims(y.shape), od);
      res.has_data = true;
      for (size_t k = 0; k < mx.size(); ++k) {
        if (x.is_float || y.is_float) {
          const auto xv = x.is_float ? std::optional<double>(x.floats[mx[k]])
                                     : (x.ints[mx[k]].p ? std::nullopt : std::optional<double>(x.ints[mx[k]].v));
          const auto yv = y.is_float ? std::optional<double>(y.floats[my[k]])
                                     : (y.ints[my[k]].p ? std::nullopt : std::optional<double>(y.ints[my[k]].v));
          const auto r = xv && yv ? float_binary(op, *xv, *yv) : std::nullopt;
          if (!r) { res.has_data = false; break; }
          if (res.is_float) res.floats.push_back(*r);
          else res.ints.push_back({static_cast<int64_t>(*r), 0});
        } else {
          const auto r = sym_binary(op, x.ints[mx[k]], y.ints[my[k]], op == "Mod" && attr_i(n, "fmod", 0) != 0);
          if (!r) { res.has_data = false; break; }
          res.ints.push_back(*r);
        }
      }
    }
    return finish();
  }
  if (op == "Where") {
    const Value& a = val(n, 1);
    const Value& b = val(n, 2);
    res.shape = broadcast_sym(broadcast_sym(x.shape, a.shape), b.shape);
    res.is_float = a.is_float;
    res.elem = a.elem;
    if (x.has_data && a.has_data && b.has_data && a.is_float == b.is_float && small_enough(res.shape, res.is_float)) {
      const auto od = plain_dims(res.shape);
      const auto mc = broadcast_map(plain_dims(x.shape), od), ma = broadcast_map(plain_dims(a.shape), od),
                 mb = broadcast_map(plain_dims(b.shape), od);
      res.has_data = true;
      for (size_t k = 0; k < mc.size(); ++k) {
        const bool c = x.is_float ? x.floats[mc[k]] != 0 : x.ints[mc[k]].v != 0;
        push_elem(c ? a : b, c ? ma[k] : mb[k], res);
      }
    }
    return finish();
  }
  if (op == "Shape" || op == "Size") {
    SymShape s = x.shape;
    if (op == "Size") {
      Sym t{1, 0};
      for (Sym d : s) t = sym_mul(t, d);
      res.shape = {};
      res.ints = {t};
    } else {
      const auto r = static_cast<int64_t>(s.size());
      int64_t b = attr_i(n, "start", 0), e = attr_i(n, "end", r);
      if (b < 0) b += r;
      if (e < 0) e += r;
      b = std::clamp<int64_t>(b, 0, r), e = std::clamp<int64_t>(e, 0, r);
      for (int64_t i = b; i < e; ++i) res.ints.push_back(s[static_cast<size_t>(i)]);
      res.shape = {{static_cast<int64_t>(res.ints.size()), 0}};
    }
    res.is_float = false;
    res.elem = onnx::TensorProto_DataType_INT64;
    res.has_data = true;
    return finish();
  }
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    if (op == "Reshape") {
      res.shape = infer_reshape(n, x.shape);
    } else if (op == "Flatten") {
      const int64_t axis = flatten_axis(attr_i(n, "axis", 1), x.shape.size());
      Sym a{1, 0}, b{1, 0};
      for (size_t i = 0; i < x.shape.size(); ++i) {
        Sym& t = static_cast<int64_t>(i) < axis ? a : b;
        t = sym_mul(t, x.shape[i]);
      }
      res.shape = {a, b};
    } else {
      std::vector<int64_t> axes;
      if (auto ax = ints_attr_or_input(n, "axes", 1, 13)) axes = *ax;
      res.shape = op == "Squeeze" ? squeeze_shape(x.shape, axes) : unsqueeze_shape(x.shape, axes);
    }
    res.has_data = x.has_data, res.ints = x.ints, res.floats = x.floats;
    return finish();
  }
  if (op == "Concat") {
    const int64_t axis = norm_axis(attr_i(n, "axis", 0), x.shape.size(), "axis");
    res.shape = x.shape;
    res.shape[static_cast<size_t>(axis)] = {0, 0};
    bool data = true;
    for (int i = 0; i < n.input_size(); ++i) {
      const Value& v = val(n, i);
      if (v.shape.size() != x.shape.size()) throw ShapeError("Concat inputs differ in rank");
      const Sym d = v.shape[static_cast<size_t>(axis)];
      Sym& o = res.shape[static_cast<size_t>(axis)];
      auto s = sym_binary("Add", o, d);
      if (!s) throw Unsupported{"Concat along an axis that mixes the batch"};
      o = *s;
      data = data && v.has_data && v.is_float == x.is_float;
    }
    if (data && small_enough(res.shape, res.is_float)) {
      const auto od = plain_dims(res.shape);
      const int64_t outer = count(std::vector<int64_t>(od.begin(), od.begin() + axis));
      const int64_t inner = count(std::vector<int64_t>(od.begin() + axis + 1, od.end()));
      for (int64_t o = 0; o < outer; ++o) {
        for (int i = 0; i < n.input_size(); ++i) {
          const Value& v = val(n, i);
          const int64_t block = v.shape[static_cast<size_t>(axis)].v * inner;
          for (int64_t k = 0; k < block; ++k) push_elem(v, o * block + k, res);
        }
      }
      res.has_data = true;
    }
    return finish();
  }
  if (op == "Gather") {
    const Value& idx = val(n, 1);
    const int64_t axis = norm_axis(attr_i(n, "axis", 0), x.shape.size(), "axis");
    res.shape.assign(x.shape.begin(), x.shape.begin() + axis);
    res.shape.insert(res.shape.end(), idx.shape.begin(), idx.shape.end());
    res.shape.insert(res.shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    if (x.has_data && idx.has_data && small_enough(res.shape, res.is_float) && all_plain(x.shape)) {
      const auto xd = plain_dims(x.shape);
      const int64_t outer = count(std::vector<int64_t>(xd.begin(), xd.begin() + axis));
      const int64_t inner = count(std::vector<int64_t>(xd.begin() + axis + 1, xd.end()));
      const int64_t dim = xd[static_cast<size_t>(axis)];
      res.has_data = true;
      for (int64_t o = 0; o < outer && res.has_data; ++o) {
        for (size_t j = 0; j < idx.ints.size(); ++j) {
          const int64_t k0 = idx.ints[j].v;
          if (k0 < -dim || k0 >= dim) {
            fail_node(n, "index " + std::to_string(k0) + " is out of range for dimension " + std::to_string(dim) + " (allowed: " +
                             std::to_string(-dim) + " to " + std::to_string(dim - 1) + ")");
          }
          const int64_t k = k0 < 0 ? k0 + dim : k0;
          for (int64_t in = 0; in < inner; ++in) push_elem(x, (o * dim + k) * inner + in, res);
        }
      }
    }
    return finish();
  }
  if (op == "Slice") {
    std::vector<int64_t> starts, ends, axes, steps;
    if (opset_ < 10) {
      starts = attr_ints(n, "starts"), ends = attr_ints(n, "ends"), axes = attr_ints(n, "axes");
    } else {
      starts = const_ints(n, 1, "starts"), ends = const_ints(n, 2, "ends");
      if (has_input(n, 3)) axes = const_ints(n, 3, "axes");
      if (has_input(n, 4)) steps = const_ints(n, 4, "steps");
    }
    if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    check_slice_lists(starts, ends, axes, steps, x.shape.size());
    res.shape = x.shape;
    const size_t r = x.shape.size();
    std::vector<int64_t> b0(r, 0), st(r, 1);
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t a = norm_axis(axes.at(i), r, "axis");
      if (x.shape[static_cast<size_t>(a)].p) throw Unsupported{"Slice of a constant along the batch"};
      int64_t b = starts[i], e = ends.at(i);
      const int64_t len = slice_len(x.shape[static_cast<size_t>(a)].v, b, e, steps.at(i));
      res.shape[static_cast<size_t>(a)] = {len, 0};
      b0[static_cast<size_t>(a)] = b, st[static_cast<size_t>(a)] = steps[i];
    }
    if (x.has_data && small_enough(res.shape, res.is_float) && all_plain(x.shape)) {
      const auto od = plain_dims(res.shape);
      const auto is = strides_of(plain_dims(x.shape));
      std::vector<int64_t> idx(r, 0);
      const int64_t total = count(od);
      for (int64_t k = 0; k < total; ++k) {
        int64_t src = 0;
        for (size_t i = 0; i < r; ++i) src += (b0[i] + idx[i] * st[i]) * is[i];
        push_elem(x, src, res);
        for (size_t i = r; i-- > 0;) {
          if (++idx[i] < od[i]) break;
          idx[i] = 0;
        }
      }
      res.has_data = true;
    }
    return finish();
  }
  if (op == "Expand") {
    const std::vector<Sym> target = const_syms(n, 1, "the shape");
    res.shape = broadcast_sym(x.shape, SymShape(target.begin(), target.end()));
    if (x.has_data && small_enough(res.shape, res.is_float)) {
      for (int64_t k : broadcast_map(plain_dims(x.shape), plain_dims(res.shape))) push_elem(x, k, res);
      res.has_data = true;
    }
    return finish();
  }
  if (op == "Transpose") {
    std::vector<int64_t> perm = attr_ints(n, "perm");
    if (perm.empty()) for (size_t i = x.shape.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    check_perm(perm, x.shape.size());
    for (int64_t p : perm) res.shape.push_back(x.shape.at(static_cast<size_t>(p)));
    if (x.has_data && small_enough(res.shape, res.is_float) && all_plain(x.shape)) {
      const auto is = strides_of(plain_dims(x.shape));
      const auto od = plain_dims(res.shape);
      std::vector<int64_t> idx(od.size(), 0);
      for (int64_t k = 0; k < count(od); ++k) {
        int64_t src = 0;
        for (size_t i = 0; i < od.size(); ++i) src += idx[i] * is[static_cast<size_t>(perm[i])];
        push_elem(x, src, res);
        for (size_t i = od.size(); i-- > 0;) {
          if (++idx[i] < od[i]) break;
          idx[i] = 0;
        }
      }
      res.has_data = true;
    }
    return finish();
  }
  if (op == "Split") {
    const int64_t axis = norm_axis(attr_i(n, "axis", 0), x.shape.size(), "axis");
    if (x.shape[static_cast<size_t>(axis)].p) throw Unsupported{"Split of a constant along the batch"};
    const std::vector<int64_t> sizes = split_sizes(n, x.shape[static_cast<size_t>(axis)].v, axis);
    for (int i = 0; i < n.output_size(); ++i) {
      res.shape = x.shape;
      res.shape[static_cast<size_t>(axis)].v = sizes.at(static_cast<size_t>(i));
      finish(i);
    }
    return;
  }
  res.shape = infer_shape_only(n);
  return finish();
}

// ---------------------------------------------------------------- spatial attributes

Importer::SpatialAttrs Importer::spatial(const Node& n, size_t dims, const std::vector<int64_t>& kernel) {
  SpatialAttrs a;
  a.kernel = kernel;
  a.strides = attr_ints(n, "strides");
  a.dilations = attr_ints(n, "dilations");
  a.pads = attr_ints(n, "pads");
  a.auto_pad = attr_s(n, "auto_pad", "NOTSET");
  if (a.strides.empty()) a.strides.assign(dims, 1);
  if (a.dilations.empty()) a.dilations.assign(dims, 1);
  if (a.pads.empty()) a.pads.assign(2 * dims, 0);
  if (a.kernel.size() != dims || a.strides.size() != dims || a.dilations.size() != dims || a.pads.size() != 2 * dims) {
    fail_node(n, "kernel_shape, strides, dilations and pads must have one entry per spatial axis (" + std::to_string(dims) +
                 ", pads two)");
  }
  // The YAML graph loader's bounds (graph.cpp), so both accept the same layers.
  auto in_range = [&](const std::vector<int64_t>& v, int64_t lo, const std::string& name) {
    for (int64_t x : v) {
      if (x < lo || x > kMaxWindowValue) {
        fail_node(n, name + " must be in [" + std::to_string(lo) + ", " + std::to_string(kMaxWindowValue) + "], got " + shape_text(v));
      }
    }
  };
  in_range(a.kernel, 1, "kernel_shape");
  in_range(a.strides, 1, "strides");
  in_range(a.dilations, 1, "dilations");
  in_range(a.pads, 0, "pads");
  for (size_t i = 0; i < dims; ++i) window_span(a.kernel[i], a.dilations[i]);  // throws if it does not fit
  return a;
}

// auto_pad SAME_UPPER / SAME_LOWER / VALID -> explicit pads (conv and pooling).
void Importer::plan_padding(const Node& n, SpatialAttrs& a, const std::vector<int64_t>& in, bool transposed,
                            const std::vector<int64_t>& out_pad) {
  const size_t d = in.size();
  if (a.auto_pad == "NOTSET" || a.auto_pad.empty()) return;
  if (a.auto_pad == "VALID") {
    a.pads.assign(2 * d, 0);
    return;
  }
  if (a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER") fail_node(n, "unknown auto_pad '" + a.auto_pad + "'");
  const bool upper = a.auto_pad == "SAME_UPPER";
  for (size_t i = 0; i < d; ++i) {
    const int64_t span = window_span(a.kernel[i], a.dilations[i]);
    int64_t total = 0;
    if (transposed) {
      const int64_t out = mul64(in[i], a.strides[i]);
      total = std::max<int64_t>(sub64(add64(add64(mul64(a.strides[i], in[i] - 1), out_pad[i]), span), out), 0);
      a.pads[i] = upper ? total / 2 : total - total / 2;
    } else {
      const int64_t out = in[i] == 0 ? 0 : 1 + (in[i] - 1) / a.strides[i];  // ceil(in / stride) without overflow
      total = std::max<int64_t>(sub64(add64(mul64(out - 1, a.strides[i]), span), in[i]), 0);
      a.pads[i] = upper ? total / 2 : total - total / 2;
    }
    a.pads[i + d] = total - a.pads[i];
  }
}

namespace {
int64_t window_len(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t s, int64_t dil, bool ceil_mode) {
  const int64_t span = window_span(k, dil);
  const int64_t padded = add64(add64(in, pb), pe);
  if (padded < span) throw ShapeError("window of " + std::to_string(span) + " does not fit an input of " + std::to_string(in));
  const int64_t room = padded - span;  // >= 0
  int64_t out = ceil_mode ? (room == 0 ? 0 : 1 + (room - 1) / s) + 1 : room / s + 1;
  if (ceil_mode && mul64(out - 1, s) >= in + pb) --out;
  return out;
}
}  // namespace

// ---------------------------------------------------------------- matrix ops

void Importer::op_conv(const Node& n, bool transposed) {
  Value& x = val(n, 0);
  Value& w = val(n, 1);
  if (!w.constant) throw Unsupported{"weights computed from activations"};
  const size_t rank = x.shape.size();
  if (rank != 3 && rank != 4) {
    throw Unsupported{(rank < 3 ? "convolution of a rank-" + std::to_string(rank) + " input" : std::to_string(rank - 2) + "-D convolution") +
                      " (1-D and 2-D are supported)"};
  }
  if (!can_channels_last(x.shape)) throw Unsupported{"input " + sym_shape_text(x.shape) + " does not have the batch first"};
  const size_t nd = rank - 2;
  if (w.shape.size() != rank || !all_plain(w.shape)) fail_node(n, "weight shape " + sym_shape_text(w.shape) + " does not match a rank-" + std::to_string(rank) + " input");
  const auto wd = plain_dims(w.shape);
  std::vector<int64_t> kernel = attr_ints(n, "kernel_shape");
  if (kernel.empty()) kernel.assign(wd.begin() + 2, wd.end());
  const int64_t group = attr_i(n, "group", 1);
  const int64_t C = x.shape[1].v;
  if (group < 1) fail_node(n, "group must be >= 1, got " + std::to_string(group));
  const int64_t F = transposed ? mul64(wd[1], group) : wd[0];
  if (transposed ? wd[0] != C : mul64(wd[1], group) != C) {
    fail_node(n, "weights " + ints_text(wd) + " with group " + std::to_string(group) + " do not fit " + std::to_string(C) +
                 " input channels");
  }
  std::vector<int64_t> in;
  for (size_t i = 2; i < rank; ++i) in.push_back(x.shape[i].v);
  SpatialAttrs a = spatial(n, nd, kernel);
  std::vector<int64_t> out_pad = attr_ints(n, "output_padding");
  if (out_pad.empty()) out_pad.assign(nd, 0);
  if (out_pad.size() != nd) fail_node(n, "output_padding must have one entry per spatial axis (" + std::to_string(nd) + ")");
  for (int64_t p : out_pad) {
    if (p < 0 || p > kMaxWindowValue) {
      fail_node(n, "output_padding must be in [0, " + std::to_string(kMaxWindowValue) + "], got " + shape_text(out_pad));
    }
  }
  const std::vector<int64_t> out_shape_attr = attr_ints(n, "output_shape");
  std::vector<int64_t> dims_out(nd);
  if (transposed && !out_shape_attr.empty()) {
    if (out_shape_attr.size() < nd) {
      fail_node(n, "output_shape " + shape_text(out_shape_attr) + " must give the " + std::to_string(nd) + " spatial dimensions");
    }
    const std::vector<int64_t> os(out_shape_attr.end() - static_cast<long>(nd), out_shape_attr.end());
    for (size_t i = 0; i < nd; ++i) {
      const int64_t span = window_span(a.kernel[i], a.dilations[i]);
      const int64_t total = sub64(add64(add64(mul64(a.strides[i], in[i] - 1), out_pad[i]), span), os[i]);
      // A negative total is extra output (ONNX: output_shape may exceed the natural size).
      if (os[i] < 1 || os[i] > kMaxBoundDim) {
        fail_node(n, "output_shape " + shape_text(out_shape_attr) + " must have spatial dimensions in [1, " +
                         std::to_string(kMaxBoundDim) + "]");
      }
      a.pads[i] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      a.pads[i + nd] = total - a.pads[i];
      dims_out[i] = os[i];
    }
  } else {
    plan_padding(n, a, in, transposed, out_pad);
    for (size_t i = 0; i < nd; ++i) {
      const int64_t span = window_span(a.kernel[i], a.dilations[i]);
      if (transposed) {
        dims_out[i] = sub64(sub64(add64(add64(mul64(a.strides[i], in[i] - 1), out_pad[i]), span), a.pads[i]), a.pads[i + nd]);
        if (dims_out[i] < 1) fail_node(n, "the pads leave spatial axis " + std::to_string(i) + " empty");
      } else {
        try {
          dims_out[i] = window_len(in[i], a.pads[i], a.pads[i + nd], a.kernel[i], a.strides[i], a.dilations[i], false);
        } catch (const ShapeError& e) {
          fail_node(n, e.what());
        }
      }
    }
  }
  Layer l;
  l.op = transposed ? OpKind::kConvTranspose2d : OpKind::kConv2d;
  l.inputs = {tensor_in(x, Layout::kChannelsLast, n)};
  l.out_features = F;
  l.groups = group;
  const size_t h = nd == 2 ? 0 : SIZE_MAX, wi = nd - 1;
  l.kernel_h = h == 0 ? a.kernel[0] : 1;
  l.kernel_w = a.kernel[wi];
  l.stride_h = h == 0 ? a.strides[0] : 1;
  l.stride_w = a.strides[wi];
  l.dilation_h = h == 0 ? a.dilations[0] : 1;
  l.dilation_w = a.dilations[wi];
  l.pad_top = h == 0 ? a.pads[0] : 0;
  l.pad_bottom = h == 0 ? a.pads[nd] : 0;
  l.pad_left = a.pads[wi];
  l.pad_right = a.pads[wi + nd];
  l.output_pad_h = h == 0 ? out_pad[0] : 0;
  l.output_pad_w = out_pad[wi];
  Value& o = out(n);
  o.shape = {x.shape[0], {F, 0}};
  for (int64_t d : dims_out) o.shape.push_back({d, 0});
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, Layout::kChannelsLast));
  set_activation(o, y, Layout::kChannelsLast);
}

void Importer::op_gemm(const Node& n) {
  Value& A = val(n, 0);
  Value& B = val(n, 1);
  if (A.constant || !B.constant) {
    throw Unsupported{A.constant ? "Gemm whose A operand is a constant and B an activation"
                                 : "Gemm of two activations (use MatMul)"};
  }
  const bool ta = attr_i(n, "transA", 0) != 0, tb = attr_i(n, "transB", 0) != 0;
  if (A.shape.size() != 2 || B.shape.size() != 2) fail_node(n, "Gemm needs 2-D operands");
  const int ba = batch_axis(A.shape, &n);
  if (ba != (ta ? 1 : 0)) throw Unsupported{"Gemm contracting over the batch dimension"};
  const Sym K = A.shape[ta ? 0 : 1];
  const Sym Kb = B.shape[tb ? 1 : 0];
  const Sym N = B.shape[tb ? 0 : 1];
  if (!(K == Kb)) fail_node(n, "inner dimensions differ: A " + sym_shape_text(A.shape) + ", B " + sym_shape_text(B.shape));
  Layer l;
  l.op = OpKind::kFc;
  l.inputs = {tensor_in(A, Layout::kNatural, n)};
  l.out_features = N.v;
  Value& o = out(n);
  o.shape = {A.shape[static_cast<size_t>(ba)], N};
  const int y = add_layer(n, l, n.output(0), per_sample(o.shape));
  set_activation(o, y, Layout::kNatural);
}

void Importer::op_matmul(const Node& n) {
  Value& A = val(n, 0);
  Value& B = val(n, 1);
  if (A.constant) throw Unsupported{"MatMul whose first operand is a constant and second an activation"};
  if (A.shape.size() < 2 || B.shape.size() < 2) throw Unsupported{"MatMul with a 1-D operand"};
  const SymShape la(A.shape.begin(), A.shape.end() - 2), lb(B.shape.begin(), B.shape.end() - 2);
  SymShape lead;
  try {
    lead = broadcast_sym(la, lb);
  } catch (const ShapeError& e) {
    fail_node(n, e.what());
  }
  const Sym K = A.shape.back(), Kb = B.shape[B.shape.size() - 2];
  if (!(K == Kb)) fail_node(n, "inner dimensions differ: " + sym_shape_text(A.shape) + " x " + sym_shape_text(B.shape));
  Value& o = out(n);
  o.shape = lead;
  o.shape.push_back(A.shape[A.shape.size() - 2]);
  o.shape.push_back(B.shape.back());
  if (K.p) throw Unsupported{"MatMul contracting over the batch dimension"};
  Layer l;
  if (B.constant) {
    for (Sym d : lb) {
      if (!is_one(d)) throw Unsupported{"MatMul with batched (3-D) weights " + sym_shape_text(B.shape)};
    }
    l.op = OpKind::kFc;
    l.inputs = {tensor_in(A, Layout::kNatural, n)};
    l.out_features = B.shape.back().v;
    const Shape want = per_sample(o.shape);
    const int y = add_layer(n, l, n.output(0), {});
    if (g_.tensors[static_cast<size_t>(y)].shape != want) {
      Layer r;
      r.op = OpKind::kReshape;
      r.inputs = {y};
      r.target_shape = want;
      const int y2 = add_layer(n, r, n.output(0) + "/reshape", want, "/reshape");
      set_activation(o, y2, Layout::kNatural);
    } else {
      set_activation(o, y, Layout::kNatural);
    }
    return;
  }
  const int bA = batch_axis(A.shape, &n), bB = batch_axis(B.shape, &n);
  if (bA >= static_cast<int>(A.shape.size()) - 2 || bB >= static_cast<int>(B.shape.size()) - 2 || bA < 0 || bB < 0) {
    throw Unsupported{"MatMul of two activations whose batch is not a leading dimension"};
  }
  l.op = OpKind::kMatmul;
  l.inputs = {tensor_in(A, Layout::kNatural, n), tensor_in(B, Layout::kNatural, n)};
  const int y = add_layer(n, l, n.output(0), per_sample(o.shape));
  set_activation(o, y, Layout::kNatural);
}

void Importer::op_recurrent(const Node& n, bool lstm) {
  Value& X = val(n, 0);
  Value& W = val(n, 1);
  Value& R = val(n, 2);
  if (!W.constant || !R.constant) throw Unsupported{"weights computed from activations"};
  const int64_t layout = attr_i(n, "layout", 0);
  const std::string dir = attr_s(n, "direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") fail_node(n, "unknown direction '" + dir + "'");
  const int64_t D = dir == "bidirectional" ? 2 : 1;
  if (X.shape.size() != 3 || W.shape.size() != 3 || R.shape.size() != 3) {
    fail_node(n, "X, W and R must be 3-D, got " + sym_shape_text(X.shape) + ", " + sym_shape_text(W.shape) + " and " +
                     sym_shape_text(R.shape));
  }
  const int64_t H = has_attr(n, "hidden_size") ? attr_i(n, "hidden_size", 0) : R.shape[2].v;
  if (H < 1 || H > kMaxBoundDim) fail_node(n, "hidden_size must be in [1, " + std::to_string(kMaxBoundDim) + "], got " + std::to_string(H));
  const int ba = batch_axis(X.shape, &n);
  if (ba != (layout == 0 ? 1 : 0) || X.shape[static_cast<size_t>(ba)].v != 1) {
    throw Unsupported{"input " + sym_shape_text(X.shape) + " must have the batch on axis " + std::to_string(layout == 0 ? 1 : 0)};
  }
  const int64_t T = X.shape[layout == 0 ? 0 : 1].v;
  const int64_t G = lstm ? 4 : 3;
  if (W.shape[1].v != G * H || R.shape[1].v != G * H || W.shape[0].v != D) {
    fail_node(n, "W " + sym_shape_text(W.shape) + " / R " + sym_shape_text(R.shape) + " do not fit hidden_size " +
                 std::to_string(H) + " and direction " + dir);
  }
  Layer l;
  l.op = lstm ? OpKind::kLstm : OpKind::kGru;
  l.inputs = {tensor_in(X, Layout::kNatural, n)};
  // Initial states that are activations (e.g. a decoder started from the encoder's state).
  const int initial_h = 5, initial_c = 6;
  Value* h0 = opt_val(n, initial_h);
  Value* c0 = lstm ? opt_val(n, initial_c) : nullptr;
  if (h0 && !h0->constant) l.inputs.push_back(tensor_in(*h0, Layout::kNatural, n));
  if (c0 && !c0->constant) {
    if (l.inputs.size() == 1) throw Unsupported{"an initial cell state without an initial hidden state"};
    l.inputs.push_back(tensor_in(*c0, Layout::kNatural, n));
  }
  l.hidden = H;
  l.directions = D;
  l.reverse = dir == "reverse";
  l.linear_before_reset = attr_i(n, "linear_before_reset", 0) != 0;
  l.peepholes = lstm && has_input(n, 7);
  const Sym bsym = X.shape[static_cast<size_t>(ba)];
  const SymShape y_shape = layout == 0 ? SymShape{{T, 0}, {D, 0}, bsym, {H, 0}} : SymShape{bsym, {T, 0}, {D, 0}, {H, 0}};
  const std::string y_name = n.output_size() > 0 && !n.output(0).empty() ? n.output(0) : node_name(n) + "/Y";
  const int y = add_layer(n, l, y_name, per_sample(y_shape));
  if (n.output_size() > 0 && !n.output(0).empty()) {
    Value& o = out(n, 0);
    o.shape = y_shape;
    set_activation(o, y, Layout::kNatural);
  }
  // Y_h and Y_c: the last step's state, copied out of the sequence.
  for (int k = 1; k <= (lstm ? 2 : 1); ++k) {
    if (n.output_size() <= k || n.output(k).empty()) continue;
    Value& o = out(n, k);
    o.shape = layout == 0 ? SymShape{{D, 0}, bsym, {H, 0}} : SymShape{bsym, {D, 0}, {H, 0}};
    o.constant = false;
    const std::string& name = n.output(k);
    if (!consumers_.count(name) && !graph_outputs_.count(name)) {
      o.poisoned = true;  // unused
      continue;
    }
    Layer s;
    s.op = OpKind::kSlice;
    s.inputs = {y};
    s.axis = 0;
    s.slice_begin = T - 1;
    s.slice_end = T;
    const int t1 = add_layer(n, s, name + "/last", {}, k == 1 ? "/Y_h" : "/Y_c");
    Layer r;
    r.op = OpKind::kReshape;
    r.inputs = {t1};
    r.target_shape = per_sample(o.shape);
    const int t2 = add_layer(n, r, name, per_sample(o.shape), k == 1 ? "/Y_h_reshape" : "/Y_c_reshape");
    set_activation(o, t2, Layout::kNatural);
  }
}

// ---------------------------------------------------------------- vector ops

Layout Importer::preferred_layout(const Value& v) const {
  if (v.tensor >= 0) return v.layout;
  return v.prefer_channels_last ? Layout::kChannelsLast : Layout::kNatural;
}

// An image-like graph input: it reaches a conv/pool (directly or through element-wise
// ops), so it is stored channels last from the start.
bool Importer::feeds_spatial(const std::string& value, int depth) const {
  static const std::unordered_set<std::string> spatial = {"Conv", "ConvTranspose", "MaxPool", "AveragePool",
                                                          "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization",
                                                          "Resize", "Upsample"};
  static const std::unordered_set<std::string> through = {"Add", "Sub", "Mul", "Div", "Relu", "Clip", "Cast",
                                                          "Identity", "Pad", "Sigmoid", "Tanh"};
  // Breadth first over the consumer lists, each value once: linear in the graph, however
  // wide (a recursive scan of every node per consumer was exponential in the fan-out).
  const auto& nodes = model_.graph().node();
  std::vector<std::string> level = {value};
  std::unordered_set<std::string> seen = {value};
  for (; depth <= 4 && !level.empty(); ++depth) {
    std::vector<std::string> next;
    for (const auto& v : level) {
      auto c = consumer_nodes_.find(v);
      if (c == consumer_nodes_.end()) continue;
      for (int i : c->second) {
        const auto& n = nodes[i];
        if (spatial.count(n.op_type())) return true;
        if (through.count(n.op_type()) && n.output_size() > 0 && seen.insert(n.output(0)).second) next.push_back(n.output(0));
      }
    }
    level = std::move(next);
  }
  return false;
}

void Importer::op_batchnorm(const Node& n) {
  Value& x = val(n, 0);
  for (int i = 1; i < n.output_size(); ++i) {
    if (!n.output(i).empty() && (consumers_.count(n.output(i)) || graph_outputs_.count(n.output(i)))) {
      throw Unsupported{"training-mode outputs (running mean/variance)"};
    }
  }
  Value& o = out(n);
  o.shape = x.shape;
  if (fusable(n.input(0))) {
    Layer* p = producer_layer(x);
    if (p && p->activation == Activation::kNone && p->op != OpKind::kMatmul) {
      // Folded into the conv's weights and bias: no layer of its own.
      set_activation(o, x.tensor, x.layout);
      o.other_tensor = -1;
      tensor_head_[static_cast<size_t>(x.tensor)] = n.output(0);
      absorb(n, "batchnorm folded");
      return;
    }
  }
  const Layout layout = preferred_layout(x);
  Layer l;
  l.op = OpKind::kBatchNorm;
  l.inputs = {tensor_in(x, layout, n)};
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

void Importer::op_unary(const Node& n, OpKind kind) {
  Value& x = val(n, 0);
  const Layout layout = preferred_layout(x);
  Layer l;
  l.op = kind;
  l.inputs = {tensor_in(x, layout, n)};
  Value& o = out(n);
  o.shape = x.shape;
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

void Importer::op_with_scalar(const Node& n, OpKind kind, float value, bool const_first) {
  Value& x = val(n, 0);
  const Layout layout = preferred_layout(x);
  Layer l;
  l.op = kind;
  l.inputs = {tensor_in(x, layout, n)};
  l.has_const = true;
  l.const_shape = {1};
  l.const_values = {value};
  l.const_first = const_first;
  Value& o = out(n);
  o.shape = x.shape;
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

void Importer::op_activation(const Node& n) {
  const std::string& op = n.op_type();
  Value& x = val(n, 0);
  Activation act = Activation::kNone;
  OpKind kind = OpKind::kRelu;
  if (op == "Relu") act = Activation::kRelu, kind = OpKind::kRelu;
  if (op == "Sigmoid") act = Activation::kSigmoid, kind = OpKind::kSigmoid;
  if (op == "Tanh") act = Activation::kTanh, kind = OpKind::kTanh;
  if (op == "Clip") {
    kind = OpKind::kClip;
    std::optional<double> lo, hi;
    if (opset_ < 11) {
      if (has_attr(n, "min")) lo = attr_f(n, "min", 0);
      if (has_attr(n, "max")) hi = attr_f(n, "max", 0);
    } else {
      if (has_input(n, 1)) lo = const_floats(n, 1, "min").at(0);
      if (has_input(n, 2)) hi = const_floats(n, 2, "max").at(0);
    }
    if (lo && *lo == 0 && hi && *hi == 6) act = Activation::kRelu6;
    else if (lo && *lo == 0 && !hi) act = Activation::kRelu;
  }
  Value& o = out(n);
  o.shape = x.shape;
  if (act != Activation::kNone && fusable(n.input(0))) {
    Layer* p = producer_layer(x);
    if (p && p->activation == Activation::kNone) {
      p->activation = act;  // the activate instruction applies it on the way out of the accumulators
      set_activation(o, x.tensor, x.layout);
      o.other_tensor = -1;
      tensor_head_[static_cast<size_t>(x.tensor)] = n.output(0);
      absorb(n, "fused");
      return;
    }
  }
  op_unary(n, kind);
}

void Importer::op_binary(const Node& n, OpKind kind) {
  std::vector<Value*> acts, consts;
  SymShape shape;
  bool first = true;
  for (int i = 0; i < n.input_size(); ++i) {
    Value& v = val(n, i);
    (v.constant ? consts : acts).push_back(&v);
    try {
      shape = first ? v.shape : broadcast_sym(shape, v.shape);
    } catch (const ShapeError& e) {
      fail_node(n, e.what());
    }
    first = false;
  }
  const int ob = batch_axis(shape, &n);
  if (ob < 0) throw Unsupported{"result " + sym_shape_text(shape) + " has no batch dimension"};
  const size_t r = shape.size();
  for (Value* a : acts) {
    const int ba = batch_axis(a->shape, &n);
    if (ba + static_cast<int>(r - a->shape.size()) != ob || !(a->shape[static_cast<size_t>(ba)] == shape[static_cast<size_t>(ob)])) {
      throw Unsupported{"broadcasts the batch of " + sym_shape_text(a->shape) + " against another dimension of " +
                        sym_shape_text(shape)};
    }
  }
  Value& o = out(n);
  o.shape = shape;
  // Layout: follow the first activation when every activation can.
  Layout layout = preferred_layout(*acts.front());
  if (!can_channels_last(shape)) layout = Layout::kNatural;
  for (Value* a : acts) {
    if (a->shape.size() != r) layout = Layout::kNatural;
  }
  // The constants' per-sample shape in the output's IR order.
  Shape cshape;
  for (Value* c : consts) {
    SymShape full(r - c->shape.size(), Sym{1, 0});
    full.insert(full.end(), c->shape.begin(), c->shape.end());
    if (!(is_one(full[static_cast<size_t>(ob)]) || full[static_cast<size_t>(ob)] == shape[static_cast<size_t>(ob)])) {
      throw Unsupported{"a constant of shape " + sym_shape_text(c->shape) + " varies along the batch"};
    }
    full[static_cast<size_t>(ob)] = shape[static_cast<size_t>(ob)];
    for (Sym& d : full) d.p = 0;
    full[static_cast<size_t>(ob)] = Sym{full[static_cast<size_t>(ob)].v, 1};
    // Dims equal to 1 stay 1; per_sample/ir_shape drop the batch axis.
    Shape ps = ir_shape(full, layout);
    cshape = cshape.empty() ? ps : broadcast_shapes(cshape, ps);
  }
  // A bias add or a scale right after a matrix layer is free: the activate applies it.
  if (acts.size() == 1 && !consts.empty() && fusable(n.input(acts.front() == &val(n, 0) ? 0 : 1)) &&
      acts.front()->shape == shape) {
    Layer* p = producer_layer(*acts.front());
    const Shape& ps = g_.tensors[static_cast<size_t>(acts.front()->tensor)].shape;
    bool per_channel = !cshape.empty();
    for (size_t i = 0; i + 1 < cshape.size(); ++i) per_channel = per_channel && cshape[i] == 1;
    const bool scalar = shape_elements(cshape) == 1;
    const bool bias = (kind == OpKind::kAdd || kind == OpKind::kSub) && per_channel &&
                      (cshape.back() == 1 || cshape.back() == ps.back()) && acts.front()->layout == layout;
    const bool scale = (kind == OpKind::kMul || kind == OpKind::kDiv) && scalar;
    if (p && p->activation == Activation::kNone && (bias || scale)) {
      Value& a = *acts.front();
      const std::vector<float> cv = constant_values(*consts.front());
      const bool divides_x = kind == OpKind::kMul || acts.front() == &val(n, 0);  // x / c, not c / x
      if (scale && divides_x && cv.size() == 1 && cv[0] != 0) p->output_multiplier *= kind == OpKind::kMul ? cv[0] : 1.0 / cv[0];
      set_activation(o, a.tensor, a.layout);
      o.other_tensor = -1;
      tensor_head_[static_cast<size_t>(a.tensor)] = n.output(0);
      absorb(n, "fused");
      return;
    }
  }
  Layer l;
  l.op = kind;
  for (Value* a : acts) l.inputs.push_back(tensor_in(*a, layout, n));
  if (!consts.empty()) {
    l.has_const = true;
    l.const_shape = cshape;
    // Values in the IR's order: only when no axis moved (channels-last keeps a
    // per-channel or scalar constant's order too) and there is one constant.
    if (consts.size() == 1 && (layout == Layout::kNatural || shape_elements(cshape) == cshape.back())) {
      l.const_values = constant_values(*consts.front());
      if (static_cast<int64_t>(l.const_values.size()) != shape_elements(cshape)) l.const_values.clear();
    }
    l.const_first = consts.front() == &val(n, 0);
  }
  const int y = add_layer(n, l, n.output(0), ir_shape(shape, layout));
  set_activation(o, y, layout);
}

void Importer::op_softmax(const Node& n) {
  Value& x = val(n, 0);
  const Layout layout = preferred_layout(x);
  Layer l;
  l.op = OpKind::kSoftmax;
  l.inputs = {tensor_in(x, layout, n)};
  l.axis = ir_axis(x, attr_i(n, "axis", opset_ < 13 ? 1 : -1), n);
  Value& o = out(n);
  o.shape = x.shape;
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

void Importer::op_layernorm(const Node& n) {
  Value& x = val(n, 0);
  const int64_t axis = norm_axis(attr_i(n, "axis", -1), x.shape.size(), "axis");
  // Mean and InvStdDev (training / test models): the statistics pass, as its own reduction.
  for (int i = 1; i < n.output_size() && i < 3; ++i) {
    const std::string& name = n.output(i);
    if (name.empty() || !(consumers_.count(name) || graph_outputs_.count(name))) continue;
    Value& o = values_[name];
    o.shape = x.shape;
    for (size_t a = static_cast<size_t>(axis); a < x.shape.size(); ++a) {
      if (x.shape[a].p) throw Unsupported{"normalises over the batch dimension"};
      o.shape[a] = {1, 0};
    }
    Layer r;
    r.op = OpKind::kReduceMean;
    r.keepdims = true;
    r.inputs = {tensor_in(x, Layout::kNatural, n)};
    Value view = x;
    view.layout = Layout::kNatural;
    for (size_t a = static_cast<size_t>(axis); a < x.shape.size(); ++a) r.axes.push_back(ir_axis(view, static_cast<int64_t>(a), n));
    const int y = add_layer(n, r, name, per_sample(o.shape), i == 1 ? "/mean" : "/inv_std_dev");
    set_activation(o, y, Layout::kNatural);
  }
  const Layout layout = preferred_layout(x);
  Layer l;
  l.op = OpKind::kLayerNorm;
  l.inputs = {tensor_in(x, layout, n)};
  l.axis = ir_axis(x, attr_i(n, "axis", -1), n);
  Value& o = out(n);
  o.shape = x.shape;
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

void Importer::op_reduce(const Node& n, OpKind kind) {
  Value& x = val(n, 0);
  const std::string& op = n.op_type();
  std::vector<int64_t> axes;
  if (auto a = ints_attr_or_input(n, "axes", 1, op == "ReduceSum" ? 13 : 18)) axes = *a;
  const bool keep = attr_i(n, "keepdims", 1) != 0;
  if (axes.empty() && attr_i(n, "noop_with_empty_axes", 0)) {
    Value& o = out(n);
    o.shape = x.shape;
    return alias(n, x, o);
  }
  if (axes.empty()) throw Unsupported{"reduces over every axis, the batch included"};
  axes = norm_axes(axes, x.shape.size(), "axis");
  Value& o = out(n);
  for (size_t i = 0; i < x.shape.size(); ++i) {
    const bool red = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!red) o.shape.push_back(x.shape[i]);
    else if (keep) o.shape.push_back({1, 0});
  }
  Layout layout = preferred_layout(x);
  if (!keep) layout = Layout::kNatural;
  Layer l;
  l.op = kind;
  l.keepdims = keep;
  l.inputs = {tensor_in(x, layout, n)};
  Value view = x;
  view.layout = layout;
  for (int64_t a : axes) l.axes.push_back(ir_axis(view, a, n));
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

void Importer::op_pool(const Node& n, OpKind kind) {
  Value& x = val(n, 0);
  if (n.output_size() > 1 && !n.output(1).empty() && consumers_.count(n.output(1))) throw Unsupported{"the Indices output"};
  const size_t rank = x.shape.size();
  if (rank != 3 && rank != 4) {
    throw Unsupported{(rank < 3 ? "pooling of a rank-" + std::to_string(rank) + " input" : std::to_string(rank - 2) + "-D pooling") +
                      " (1-D and 2-D are supported)"};
  }
  if (!can_channels_last(x.shape)) throw Unsupported{"input " + sym_shape_text(x.shape) + " does not have the batch first"};
  const size_t nd = rank - 2;
  const std::vector<int64_t> kernel = attr_ints(n, "kernel_shape");
  if (kernel.size() != nd) fail_node(n, "kernel_shape must have " + std::to_string(nd) + " entries");
  SpatialAttrs a = spatial(n, nd, kernel);
  std::vector<int64_t> in;
  for (size_t i = 2; i < rank; ++i) in.push_back(x.shape[i].v);
  plan_padding(n, a, in, false, {});
  const bool ceil_mode = attr_i(n, "ceil_mode", 0) != 0;
  Value& o = out(n);
  o.shape = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < nd; ++i) {
    try {
      o.shape.push_back({window_len(in[i], a.pads[i], a.pads[i + nd], a.kernel[i], a.strides[i], a.dilations[i], ceil_mode), 0});
    } catch (const ShapeError& e) {
      fail_node(n, e.what());
    }
  }
  Layer l;
  l.op = kind;
  l.inputs = {tensor_in(x, Layout::kChannelsLast, n)};
  const bool two = nd == 2;
  l.kernel_h = two ? a.kernel[0] : 1, l.kernel_w = a.kernel[nd - 1];
  l.stride_h = two ? a.strides[0] : 1, l.stride_w = a.strides[nd - 1];
  l.dilation_h = two ? a.dilations[0] : 1, l.dilation_w = a.dilations[nd - 1];
  l.pad_top = two ? a.pads[0] : 0, l.pad_bottom = two ? a.pads[nd] : 0;
  l.pad_left = a.pads[nd - 1], l.pad_right = a.pads[2 * nd - 1];
  l.ceil_mode = ceil_mode;
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, Layout::kChannelsLast));
  set_activation(o, y, Layout::kChannelsLast);
}

void Importer::op_global_pool(const Node& n, OpKind kind) {
  Value& x = val(n, 0);
  if (x.shape.size() != 3 && x.shape.size() != 4) throw Unsupported{"global pooling of a rank-" + std::to_string(x.shape.size()) + " input"};
  if (!can_channels_last(x.shape)) throw Unsupported{"input " + sym_shape_text(x.shape) + " does not have the batch first"};
  Value& o = out(n);
  o.shape = {x.shape[0], x.shape[1]};
  for (size_t i = 2; i < x.shape.size(); ++i) o.shape.push_back({1, 0});
  Layer l;
  l.op = kind;
  l.keepdims = true;
  l.inputs = {tensor_in(x, Layout::kChannelsLast, n)};
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, Layout::kChannelsLast));
  set_activation(o, y, Layout::kChannelsLast);
}

void Importer::op_reshape_like(const Node& n) {
  Value& x = val(n, 0);
  const std::string& op = n.op_type();
  for (int i = 1; i < n.output_size(); ++i) {
    if (!n.output(i).empty() && consumers_.count(n.output(i))) throw Unsupported{"output " + std::to_string(i)};
  }
  SymShape shape;
  if (op == "Reshape") {
    try {
      shape = infer_reshape(n, x.shape);
    } catch (const ShapeError& e) {
      fail_node(n, e.what());
    }
  } else if (op == "Flatten") {
    const int64_t axis = flatten_axis(attr_i(n, "axis", 1), x.shape.size());
    Sym a{1, 0}, b{1, 0};
    for (size_t i = 0; i < x.shape.size(); ++i) {
      Sym& t = static_cast<int64_t>(i) < axis ? a : b;
      t = sym_mul(t, x.shape[i]);
    }
    shape = {a, b};
  } else if (op == "Squeeze" || op == "Unsqueeze") {
    std::vector<int64_t> axes;
    if (auto ax = ints_attr_or_input(n, "axes", 1, 13)) axes = *ax;
    if (op == "Squeeze") {
      for (int64_t a : axes) {
        const int64_t k = a < 0 ? a + static_cast<int64_t>(x.shape.size()) : a;
        if (k >= 0 && k < static_cast<int64_t>(x.shape.size()) && x.shape[static_cast<size_t>(k)].p) {
          throw Unsupported{"squeezes the batch dimension (axis " + std::to_string(k) + ")"};
        }
      }
    }
    try {
      shape = op == "Squeeze" ? squeeze_shape(x.shape, axes) : unsqueeze_shape(x.shape, axes);
    } catch (const ShapeError& e) {
      fail_node(n, e.what());
    }
  } else {
    shape = x.shape;  // Identity, Cast, Dropout, (De)QuantizeLinear: precision is the policy's business
  }
  if (batch_axis(shape, &n) < 0) throw Unsupported{"result " + sym_shape_text(shape) + " has no batch dimension"};
  if (shape_elements(per_sample(shape)) != shape_elements(per_sample(x.shape))) {
    throw Unsupported{"reshapes " + sym_shape_text(x.shape) + " to " + sym_shape_text(shape) + " across the batch"};
  }
  Value& o = out(n);
  o.shape = shape;
  alias(n, x, o);
}

void Importer::op_transpose(const Node& n) {
  Value& x = val(n, 0);
  const size_t r = x.shape.size();
  std::vector<int64_t> perm = attr_ints(n, "perm");
  if (perm.empty()) for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  check_perm(perm, r);
  Value& o = out(n);
  for (int64_t p : perm) o.shape.push_back(x.shape.at(static_cast<size_t>(p)));
  const int ba = batch_axis(x.shape, &n);
  const bool pure = ba >= 0 && x.shape[static_cast<size_t>(ba)].v == 1;
  const Layout layout = preferred_layout(x);
  const int t = tensor_in(x, layout, n);
  // IR axes of the input, as ONNX axes.
  std::vector<int64_t> in_axes;
  if (layout == Layout::kChannelsLast && can_channels_last(x.shape)) {
    for (size_t i = 2; i < r; ++i) in_axes.push_back(static_cast<int64_t>(i));
    in_axes.push_back(1);
  } else {
    for (size_t i = 0; i < r; ++i) {
      if (!(pure && static_cast<int>(i) == ba)) in_axes.push_back(static_cast<int64_t>(i));
    }
  }
  std::vector<int64_t> ir_perm;
  for (int64_t p : perm) {
    if (pure && p == ba) continue;
    ir_perm.push_back(std::find(in_axes.begin(), in_axes.end(), p) - in_axes.begin());
  }
  const Shape want = per_sample(o.shape);
  // NHWC -> NCHW of a tensor stored [H, W, C] (e.g. a TensorFlow export before a conv):
  // the result's channels-last form is the input as stored.
  if (r == 4 && can_channels_last(o.shape) && perm[0] == ba && pure) {
    std::vector<int64_t> cl_axes;
    for (size_t i = 2; i < r; ++i) cl_axes.push_back(perm[i]);
    cl_axes.push_back(perm[1]);
    if (cl_axes == in_axes) {
      set_activation(o, t, Layout::kChannelsLast);
      absorb(n, "alias");
      return;
    }
  }
  bool identity = true;
  for (size_t i = 0; i < ir_perm.size(); ++i) identity = identity && ir_perm[i] == static_cast<int64_t>(i);
  // Only size-1 axes move: the element order is the same.
  Shape a, b;
  for (int64_t d : g_.tensors[static_cast<size_t>(t)].shape) if (d != 1) a.push_back(d);
  for (int64_t d : want) if (d != 1) b.push_back(d);
  bool same_order = a == b;
  if (same_order && !identity) {
    std::vector<int64_t> order_in, order_out;
    const Shape& ts = g_.tensors[static_cast<size_t>(t)].shape;
    for (size_t i = 0; i < ts.size(); ++i) if (ts[i] != 1) order_in.push_back(static_cast<int64_t>(i));
    for (size_t i = 0; i < ir_perm.size(); ++i) if (want[i] != 1) order_out.push_back(ir_perm[i]);
    same_order = order_in == order_out;
  }
  if (identity || same_order) {
    if (g_.tensors[static_cast<size_t>(t)].shape == want) {
      set_activation(o, t, Layout::kNatural);
      absorb(n, "alias");
      return;
    }
    Layer l;
    l.op = OpKind::kReshape;
    l.inputs = {t};
    l.target_shape = want;
    const int y = add_layer(n, l, n.output(0), want);
    set_activation(o, y, Layout::kNatural);
    return;
  }
  Layer l;
  l.op = OpKind::kTranspose;
  l.inputs = {t};
  l.perm = ir_perm;
  const int y = add_layer(n, l, n.output(0), want);
  set_activation(o, y, Layout::kNatural);
}

void Importer::op_concat(const Node& n) {
  std::vector<Value*> ins;
  for (int i = 0; i < n.input_size(); ++i) {
    Value& v = val(n, i);
    if (v.constant) throw Unsupported{"Concat of activations with a constant ('" + n.input(i) + "')"};
    ins.push_back(&v);
  }
  Value& x = *ins.front();
  const int64_t axis = norm_axis(attr_i(n, "axis", 0), x.shape.size(), "axis");
  Value& o = out(n);
  o.shape = x.shape;
  Sym total{0, 0};
  for (Value* v : ins) {
    if (v->shape.size() != x.shape.size()) fail_node(n, "inputs differ in rank");
    auto s = sym_binary("Add", total, v->shape[static_cast<size_t>(axis)]);
    if (!s) throw Unsupported{"Concat along the batch dimension"};
    total = *s;
  }
  o.shape[static_cast<size_t>(axis)] = total;
  Layout layout = preferred_layout(x);
  if (!can_channels_last(o.shape)) layout = Layout::kNatural;
  Layer l;
  l.op = OpKind::kConcat;
  for (Value* v : ins) l.inputs.push_back(tensor_in(*v, layout, n));
  Value view = x;
  view.layout = layout;
  l.axis = ir_axis(view, axis, n);
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

int Importer::slice_ir(const Node& n, Value& in, int64_t onnx_axis, int64_t begin, int64_t end, int64_t step, int tensor,
                       const std::string& out_name, const std::string& suffix, Shape* ir_out) {
  Layer l;
  l.op = OpKind::kSlice;
  l.inputs = {tensor};
  Value view = in;
  view.layout = in.layout;
  l.axis = ir_axis(view, onnx_axis, n);
  l.slice_begin = begin;
  l.slice_end = end;
  l.slice_step = step;
  const int y = add_layer(n, l, out_name, {}, suffix);
  if (ir_out) *ir_out = g_.tensors[static_cast<size_t>(y)].shape;
  return y;
}

// Split's part sizes along an axis of `dim` elements: given (as many as outputs, >= 0,
// summing to dim) or equal parts, the last one smaller (opset 18), none empty.
std::vector<int64_t> Importer::split_sizes(const Node& n, int64_t dim, int64_t axis) {
  std::vector<int64_t> sizes;
  if (auto s = ints_attr_or_input(n, "split", 1, 13)) sizes = *s;
  const int64_t parts = n.output_size();
  if (parts < 1) throw ShapeError("Split has no outputs");
  if (sizes.empty()) {
    if (parts > dim) {
      throw ShapeError("Split into " + std::to_string(parts) + " outputs, more than the " + std::to_string(dim) +
                       " elements of axis " + std::to_string(axis));
    }
    const int64_t each = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(each, dim - i * each));
    if (sizes.back() < 1) {
      throw ShapeError("Split of " + std::to_string(dim) + " elements into " + std::to_string(parts) +
                       " equal outputs leaves the last one empty");
    }
    return sizes;
  }
  if (static_cast<int64_t>(sizes.size()) != parts) {
    throw ShapeError("split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(parts) + " outputs");
  }
  int64_t sum = 0;
  for (int64_t v : sizes) {
    if (v < 0) throw ShapeError("split sizes must be >= 0, got " + shape_text(sizes));
    sum = add64(sum, v);
  }
  if (sum != dim) {
    throw ShapeError("split sizes " + shape_text(sizes) + " sum to " + std::to_string(sum) + ", but axis " + std::to_string(axis) +
                     " has " + std::to_string(dim));
  }
  return sizes;
}

void Importer::op_split(const Node& n) {
  Value& x = val(n, 0);
  const int64_t axis = norm_axis(attr_i(n, "axis", 0), x.shape.size(), "axis");
  const int64_t dim = x.shape[static_cast<size_t>(axis)].v;
  if (x.shape[static_cast<size_t>(axis)].p) throw Unsupported{"Split along the batch dimension"};
  const std::vector<int64_t> sizes = split_sizes(n, dim, axis);
  const int64_t parts = n.output_size();
  const Layout layout = preferred_layout(x);
  const int t = tensor_in(x, layout, n);
  int64_t begin = 0;
  for (int64_t i = 0; i < parts; ++i) {
    const std::string& name = n.output(static_cast<int>(i));
    const int64_t size = sizes[static_cast<size_t>(i)];
    if (!name.empty()) {
      Value& o = values_[name];
      o.shape = x.shape;
      o.shape[static_cast<size_t>(axis)].v = size;
      o.constant = false;
      if (consumers_.count(name) || graph_outputs_.count(name)) {
        Shape got;
        const int y = slice_ir(n, x, axis, begin, begin + size, 1, t, name, "/" + std::to_string(i), &got);
        if (got != ir_shape(o.shape, layout)) throw std::logic_error(file_ + ": " + where(n) + ": split shape mismatch");
        set_activation(o, y, layout);
      } else {
        o.poisoned = true;
      }
    }
    begin += size;
  }
}

void Importer::op_slice(const Node& n) {
  Value& x = val(n, 0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ < 10) {
    starts = attr_ints(n, "starts"), ends = attr_ints(n, "ends"), axes = attr_ints(n, "axes");
  } else {
    starts = const_ints(n, 1, "starts"), ends = const_ints(n, 2, "ends");
    if (has_input(n, 3)) axes = const_ints(n, 3, "axes");
    if (has_input(n, 4)) steps = const_ints(n, 4, "steps");
  }
  if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  check_slice_lists(starts, ends, axes, steps, x.shape.size());
  Value& o = out(n);
  o.shape = x.shape;
  const Layout layout = preferred_layout(x);
  int t = tensor_in(x, layout, n);
  Value cur = x;
  cur.layout = layout;
  int cuts = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = norm_axis(axes.at(i), x.shape.size(), "axis");
    const Sym d = x.shape[static_cast<size_t>(a)];
    if (d.p) {
      // The batch axis: only the whole of it.
      if (starts[i] == 0 && ends.at(i) >= eval(d, batch_) && steps.at(i) == 1) continue;  // all of it
      throw Unsupported{"Slice along the batch dimension"};
    }
    int64_t b = starts[i], e = ends.at(i);
    const int64_t len = slice_len(d.v, b, e, steps.at(i));
    if (len < 1) fail_node(n, "the slice of axis " + std::to_string(a) + " is empty");
    o.shape[static_cast<size_t>(a)].v = len;
    if (len == d.v && steps[i] == 1) continue;  // the whole axis
    const bool last = i + 1 == starts.size();
    const std::string name = last ? n.output(0) : n.output(0) + "/" + std::to_string(cuts);
    t = slice_ir(n, cur, a, b, steps[i] > 0 ? b + (len - 1) * steps[i] + 1 : b + (len - 1) * steps[i] - 1, steps[i], t, name,
                 cuts ? "/" + std::to_string(cuts) : "", nullptr);
    cur.shape = o.shape;
    ++cuts;
  }
  if (cuts == 0) return alias(n, x, o);
  if (g_.tensors[static_cast<size_t>(t)].shape != ir_shape(o.shape, layout)) {
    throw std::logic_error(file_ + ": " + where(n) + ": slice shape mismatch");
  }
  set_activation(o, t, layout);
}

void Importer::op_gather(const Node& n) {
  Value& data = val(n, 0);
  Value& idx = val(n, 1);
  const int64_t axis = norm_axis(attr_i(n, "axis", 0), data.shape.size(), "axis");
  Value& o = out(n);
  o.shape.assign(data.shape.begin(), data.shape.begin() + axis);
  o.shape.insert(o.shape.end(), idx.shape.begin(), idx.shape.end());
  o.shape.insert(o.shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  if (data.constant && !idx.constant) {
    // An embedding lookup: the table lives with the host (as on TPU v1), the looked-up
    // rows arrive as an input of the accelerator program.
    if (batch_axis(o.shape, &n) < 0) throw Unsupported{"result has no batch dimension"};
    o.constant = false;
    o.layout = Layout::kNatural;
    o.tensor = add_tensor(n.output(0), per_sample(o.shape), opts_.activation_dtype, -1);
    g_.inputs.push_back(o.tensor);
    input_order_.push_back(model_.graph().input_size() + static_cast<int>(input_order_.size()));
    absorb(n, "host");
    return;
  }
  if (!idx.constant) throw Unsupported{"Gather of an activation with activation indices"};
  const std::vector<int64_t> ix = const_ints(n, 1, "indices");
  if (idx.shape.size() > 1) throw Unsupported{"Gather with multi-dimensional indices of an activation"};
  if (data.shape[static_cast<size_t>(axis)].p) throw Unsupported{"Gather along the batch dimension"};
  const int64_t dim = data.shape[static_cast<size_t>(axis)].v;
  std::vector<int64_t> norm;
  for (int64_t k : ix) {
    if (k < -dim || k >= dim) {
      fail_node(n, "index " + std::to_string(k) + " is out of range for dimension " + std::to_string(dim) + " (allowed: " +
                       std::to_string(-dim) + " to " + std::to_string(dim - 1) + ")");
    }
    norm.push_back(k < 0 ? k + dim : k);
  }
  const int64_t first = norm.empty() ? 0 : norm.front();
  const int64_t step = norm.size() > 1 ? norm[1] - norm[0] : 1;
  for (size_t i = 1; i < norm.size(); ++i) {
    if (norm[i] - norm[i - 1] != step || step == 0) throw Unsupported{"Gather of an activation with irregular indices"};
  }
  const int64_t cnt = static_cast<int64_t>(norm.size());
  const Layout layout = preferred_layout(data);
  const int t = tensor_in(data, layout, n);
  Value view = data;
  view.layout = layout;
  const int64_t end = step > 0 ? first + (cnt - 1) * step + 1 : first + (cnt - 1) * step - 1;
  const int y = slice_ir(n, view, axis, first, end, step, t, n.output(0) + (idx.shape.empty() ? "/slice" : ""), "", nullptr);
  if (idx.shape.empty()) {
    // A scalar index drops the axis: a reshape, no data moves.
    Layer r;
    r.op = OpKind::kReshape;
    r.inputs = {y};
    r.target_shape = per_sample(o.shape);
    const int y2 = add_layer(n, r, n.output(0), per_sample(o.shape), "/reshape");
    set_activation(o, y2, Layout::kNatural);
    return;
  }
  set_activation(o, y, layout);
}

void Importer::op_expand(const Node& n) {
  Value& x = val(n, 0);
  const std::vector<Sym> target = const_syms(n, 1, "the shape");
  Value& o = out(n);
  try {
    o.shape = broadcast_sym(x.shape, SymShape(target.begin(), target.end()));
  } catch (const ShapeError& e) {
    fail_node(n, e.what());
  }
  if (o.shape == x.shape) return alias(n, x, o);
  const int ob = batch_axis(o.shape, &n), ba = batch_axis(x.shape, &n);
  if (ba + static_cast<int>(o.shape.size() - x.shape.size()) != ob) throw Unsupported{"Expand moves the batch"};
  Layer l;
  l.op = OpKind::kExpand;
  l.inputs = {tensor_in(x, Layout::kNatural, n)};
  l.target_shape = per_sample(o.shape);
  const int y = add_layer(n, l, n.output(0), per_sample(o.shape));
  set_activation(o, y, Layout::kNatural);
}

void Importer::op_pad(const Node& n) {
  Value& x = val(n, 0);
  const size_t r = x.shape.size();
  std::vector<int64_t> pads = opset_ < 11 ? attr_ints(n, "pads") : const_ints(n, 1, "pads");
  std::vector<int64_t> axes;
  if (opset_ >= 18 && has_input(n, 3)) axes = const_ints(n, 3, "axes");
  if (axes.empty()) for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  if (pads.size() != 2 * axes.size()) fail_node(n, "pads has " + std::to_string(pads.size()) + " entries for " + std::to_string(axes.size()) + " axes");
  std::vector<int64_t> begin(r, 0), end(r, 0);
  axes = norm_axes(axes, r, "axis");
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    begin[static_cast<size_t>(a)] = pads[i];
    end[static_cast<size_t>(a)] = pads[i + axes.size()];
  }
  Value& o = out(n);
  o.shape = x.shape;
  for (size_t i = 0; i < r; ++i) {
    if (begin[i] == 0 && end[i] == 0) continue;
    if (x.shape[i].p) throw Unsupported{"Pad of the batch dimension"};
    o.shape[i].v = add64(o.shape[i].v, add64(begin[i], end[i]));
    if (o.shape[i].v < 1) fail_node(n, "padding makes axis " + std::to_string(i) + " empty");
  }
  if (o.shape == x.shape) return alias(n, x, o);
  const Layout layout = preferred_layout(x);
  Layer l;
  l.op = OpKind::kPad;
  l.inputs = {tensor_in(x, layout, n)};
  l.mode = attr_s(n, "mode", "constant");
  Value view = x;
  view.layout = layout;
  const size_t ir_rank = g_.tensors[static_cast<size_t>(l.inputs[0])].shape.size();
  l.pads.assign(2 * ir_rank, 0);
  for (size_t i = 0; i < r; ++i) {
    if (begin[i] == 0 && end[i] == 0) continue;
    const auto ia = static_cast<size_t>(ir_axis(view, static_cast<int64_t>(i), n));
    l.pads[ia] = begin[i];
    l.pads[ia + ir_rank] = end[i];
  }
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

void Importer::op_resize(const Node& n) {
  Value& x = val(n, 0);
  const size_t r = x.shape.size();
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  const bool upsample = n.op_type() == "Upsample";
  if (upsample) {
    if (opset_ < 9) {
      const auto* a = attr(n, "scales");
      if (a) scales.assign(a->floats().begin(), a->floats().end());
    } else {
      scales = const_floats(n, 1, "scales");
    }
  } else if (opset_ < 11) {
    scales = const_floats(n, 1, "scales");
  } else {
    if (has_input(n, 3) && !val(n, 3).shape.empty() && count(full_dims(val(n, 3).shape)) > 0) sizes = const_ints(n, 3, "sizes");
    else if (has_input(n, 2)) scales = const_floats(n, 2, "scales");
  }
  std::vector<int64_t> axes = attr_ints(n, "axes");
  if (axes.empty()) for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  Value& o = out(n);
  o.shape = x.shape;
  if (sizes.empty() && scales.size() != axes.size()) fail_node(n, "needs scales or sizes for every axis");
  if (!sizes.empty() && sizes.size() != axes.size()) {
    fail_node(n, "sizes has " + std::to_string(sizes.size()) + " entries for " + std::to_string(axes.size()) + " axes");
  }
  axes = norm_axes(axes, r, "axis");
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(axes[i]);
    if (sizes.empty() && !(scales[i] > 0)) fail_node(n, "scales must be > 0, got " + std::to_string(scales[i]));
    const int64_t nv = sizes.empty() ? to_int64(std::floor(static_cast<double>(x.shape[a].v) * scales[i] + 1e-9), "the resized dimension")
                                     : sizes[i];
    if (nv < 1) fail_node(n, "the output's axis " + std::to_string(a) + " would have " + std::to_string(nv) + " elements (must be >= 1)");
    if (x.shape[a].p) {
      if (nv != x.shape[a].v) throw Unsupported{"Resize of the batch dimension"};
      continue;
    }
    o.shape[a].v = nv;
  }
  std::string mode = attr_s(n, "mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear" && mode != "cubic") fail_node(n, "unknown mode '" + mode + "'");
  const Layout layout = preferred_layout(x);
  Layer l;
  l.op = OpKind::kResize;
  l.mode = mode;
  l.inputs = {tensor_in(x, layout, n)};
  l.target_shape = ir_shape(o.shape, layout);
  const int y = add_layer(n, l, n.output(0), ir_shape(o.shape, layout));
  set_activation(o, y, layout);
}

// ---------------------------------------------------------------- dispatch and driver

// How many inputs each op the importer handles takes (ONNX's operator schemas, across
// the opsets it reads): one table, checked before any handler reads input(i), so a node
// with too few or too many inputs is an error naming it and the allowed counts.
void Importer::check_arity(const Node& n) const {
  struct Arity {
    int min_in, max_in;
  };
  constexpr int kAny = std::numeric_limits<int>::max();
  static const std::unordered_map<std::string, Arity> table = {
      {"Constant", {0, 0}}, {"ConstantOfShape", {1, 1}}, {"Range", {3, 3}}, {"Shape", {1, 1}}, {"Size", {1, 1}},
      {"Conv", {2, 3}}, {"ConvTranspose", {2, 3}}, {"Gemm", {2, 3}}, {"MatMul", {2, 2}}, {"LSTM", {3, 8}}, {"GRU", {3, 6}},
      {"BatchNormalization", {5, 5}}, {"LayerNormalization", {2, 3}}, {"Clip", {1, 3}}, {"FastGelu", {1, 2}},
      {"Add", {2, 2}}, {"Sub", {2, 2}}, {"Mul", {2, 2}}, {"Div", {2, 2}}, {"Pow", {2, 2}}, {"Mod", {2, 2}},
      {"Equal", {2, 2}}, {"Less", {2, 2}}, {"Greater", {2, 2}}, {"LessOrEqual", {2, 2}}, {"GreaterOrEqual", {2, 2}},
      {"And", {2, 2}}, {"Or", {2, 2}}, {"Max", {1, kAny}}, {"Min", {1, kAny}}, {"Where", {3, 3}},
      {"ReduceMean", {1, 2}}, {"ReduceSum", {1, 2}}, {"ReduceMax", {1, 2}}, {"ReduceMin", {1, 2}}, {"ReduceProd", {1, 2}},
      {"Reshape", {2, 2}}, {"Squeeze", {1, 2}}, {"Unsqueeze", {1, 2}}, {"CastLike", {2, 2}}, {"Dropout", {1, 3}},
      {"QuantizeLinear", {2, 3}}, {"DequantizeLinear", {2, 3}}, {"Concat", {1, kAny}}, {"Split", {1, 2}},
      {"Gather", {2, 2}}, {"Expand", {2, 2}}, {"Resize", {1, 4}}, {"Upsample", {1, 2}}, {"Tile", {2, 2}}};
  // Every other op the importer handles or folds takes exactly one input.
  static const std::unordered_set<std::string> unary = {
      "Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Gelu", "Erf", "Sqrt", "Exp", "Log", "Neg",
      "Reciprocal", "Abs", "Floor", "Ceil", "Round", "Not", "Sign", "Softmax", "LogSoftmax", "MaxPool", "AveragePool",
      "GlobalAveragePool", "GlobalMaxPool", "Flatten", "Identity", "Cast", "Transpose"};
  Arity a{-1, -1};
  if (n.op_type() == "Slice") a = opset_ < 10 ? Arity{1, 1} : Arity{3, 5};  // starts/ends: attributes, then inputs
  else if (n.op_type() == "Pad") a = opset_ < 11 ? Arity{1, 1} : Arity{2, 4};
  else if (auto it = table.find(n.op_type()); it != table.end()) a = it->second;
  else if (unary.count(n.op_type())) a = {1, 1};
  if (n.output_size() < 1) fail_node(n, "has no outputs (every op has at least one; corrupt file?)");
  for (int i = 0; i < n.attribute_size(); ++i) {
    for (int j = 0; j < i; ++j) {
      if (n.attribute(i).name() == n.attribute(j).name()) {
        fail_node(n, "attribute '" + utf8_safe(n.attribute(i).name()) + "' is given twice");
      }
    }
  }
  if (a.min_in < 0) return;  // not an op of the importer's: reported as unsupported
  // Attributes the op's schema requires (a default would silently change its meaning).
  static const std::unordered_map<std::string, std::vector<std::string>> required = {
      {"Cast", {"to"}}, {"Concat", {"axis"}}, {"MaxPool", {"kernel_shape"}}, {"AveragePool", {"kernel_shape"}}};
  if (auto r = required.find(n.op_type()); r != required.end()) {
    for (const auto& name : r->second) {
      if (!attr(n, name)) fail_node(n, "needs the attribute '" + name + "', which is missing");
    }
  }
  if (opset_ < 10 && n.op_type() == "Slice" && (!attr(n, "starts") || !attr(n, "ends"))) {
    fail_node(n, "needs the attributes 'starts' and 'ends' (opset " + std::to_string(opset_) + ")");
  }
  const int k = n.input_size();
  if (k >= a.min_in && k <= a.max_in) return;
  const std::string allowed = a.min_in == a.max_in ? std::to_string(a.min_in)
                              : a.max_in == kAny   ? "at least " + std::to_string(a.min_in)
                                                   : std::to_string(a.min_in) + " to " + std::to_string(a.max_in);
  fail_node(n, "needs " + allowed + " inputs" + (opset_ ? " (opset " + std::to_string(opset_) + ")" : std::string()) + ", has " +
                   std::to_string(k));
}

// Every value a node produced: no negative dimension, at most 2^50 elements at the bound
// batch (so later products and allocations stay in range). Throws ShapeError.
void Importer::check_outputs(const Node& n) {
  for (const auto& name : n.output()) {
    if (name.empty()) continue;
    auto it = values_.find(name);
    if (it == values_.end() || it->second.poisoned) continue;
    const SymShape& s = it->second.shape;
    if (s.size() > static_cast<size_t>(kMaxRank)) {
      throw ShapeError("output '" + utf8_safe(name) + "' would have rank " + std::to_string(s.size()) + " (at most " +
                       std::to_string(kMaxRank) + ")");
    }
    int64_t elements = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i].v < 0) {
        throw ShapeError("output '" + utf8_safe(name) + "' would have shape " + sym_shape_text(s) + ": dimension " +
                         std::to_string(i) + " is negative");
      }
      const auto e = checked_mul(elements, eval(s[i], batch_));
      if (!e || *e > kMaxTensorElements) {
        throw ShapeError("output '" + utf8_safe(name) + "' would have shape " + sym_shape_text(s) +
                         ": more than 2^50 elements (at most " + std::to_string(kMaxTensorElements) + ")");
      }
      elements = *e;
    }
  }
}

void Importer::dispatch(const Node& n) {
  const std::string& op = n.op_type();
  const std::string& dom = n.domain();
  const bool ms = dom == "com.microsoft";
  if (!dom.empty() && dom != "ai.onnx" && !(ms && (op == "Gelu" || op == "FastGelu"))) {
    throw Unsupported{"op of domain '" + dom + "'"};
  }
  check_arity(n);
  if (op == "Shape" || op == "Size" || all_constant(n)) return fold_or_shape(n);

  const auto& table = handler_table();
  auto it = table.find(op);
  if (it == table.end()) throw Unsupported{""};
  it->second(*this, n);
}

// The ONNX op types with a handler: dispatch() and the unsupported-node message (and
// onnx_supported_ops()) read this one table, so the message cannot drift from it.
const std::map<std::string, Importer::Handler>& Importer::handler_table() {
  static const std::map<std::string, Handler> table = {
      {"Conv", [](Importer& m, const Node& n) { m.op_conv(n, false); }},
      {"ConvTranspose", [](Importer& m, const Node& n) { m.op_conv(n, true); }},
      {"Gemm", [](Importer& m, const Node& n) { m.op_gemm(n); }},
      {"MatMul", [](Importer& m, const Node& n) { m.op_matmul(n); }},
      {"LSTM", [](Importer& m, const Node& n) { m.op_recurrent(n, true); }},
      {"GRU", [](Importer& m, const Node& n) { m.op_recurrent(n, false); }},
      {"BatchNormalization", [](Importer& m, const Node& n) { m.op_batchnorm(n); }},
      {"Relu", [](Importer& m, const Node& n) { m.op_activation(n); }},
      {"Sigmoid", [](Importer& m, const Node& n) { m.op_activation(n); }},
      {"Tanh", [](Importer& m, const Node& n) { m.op_activation(n); }},
      {"Clip", [](Importer& m, const Node& n) { m.op_activation(n); }},
      {"LeakyRelu", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kLeakyRelu); }},
      {"HardSigmoid", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kHardSigmoid); }},
      {"HardSwish", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kHardSwish); }},
      {"Gelu", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kGelu); }},
      {"FastGelu", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kGelu); }},
      {"Erf", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kErf); }},
      {"Sqrt", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kSqrt); }},
      {"Exp", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kExp); }},
      {"Softplus", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kSoftplus); }},
      {"Neg", [](Importer& m, const Node& n) { m.op_with_scalar(n, OpKind::kMul, -1.0f, false); }},  // x * -1
      {"Reciprocal", [](Importer& m, const Node& n) { m.op_with_scalar(n, OpKind::kDiv, 1.0f, true); }},  // 1 / x
      {"Add", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kAdd); }},
      {"Sub", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kSub); }},
      {"Mul", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kMul); }},
      {"Div", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kDiv); }},
      {"Pow", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kPow); }},
      {"Max", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kMax); }},
      {"Min", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kMin); }},
      {"Where", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kWhere); }},
      {"Softmax", [](Importer& m, const Node& n) { m.op_softmax(n); }},
      {"LogSoftmax", [](Importer& m, const Node& n) { m.op_softmax(n); }},
      {"LayerNormalization", [](Importer& m, const Node& n) { m.op_layernorm(n); }},
      {"ReduceMean", [](Importer& m, const Node& n) { m.op_reduce(n, OpKind::kReduceMean); }},
      {"ReduceSum", [](Importer& m, const Node& n) { m.op_reduce(n, OpKind::kReduceSum); }},
      {"ReduceMax", [](Importer& m, const Node& n) { m.op_reduce(n, OpKind::kReduceMax); }},
      {"MaxPool", [](Importer& m, const Node& n) { m.op_pool(n, OpKind::kMaxPool); }},
      {"AveragePool", [](Importer& m, const Node& n) { m.op_pool(n, OpKind::kAvgPool); }},
      {"GlobalAveragePool", [](Importer& m, const Node& n) { m.op_global_pool(n, OpKind::kGlobalAvgPool); }},
      {"GlobalMaxPool", [](Importer& m, const Node& n) { m.op_global_pool(n, OpKind::kGlobalMaxPool); }},
      {"Reshape", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Flatten", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Squeeze", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Unsqueeze", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Identity", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Cast", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"CastLike", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Dropout", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"QuantizeLinear", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"DequantizeLinear", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Transpose", [](Importer& m, const Node& n) { m.op_transpose(n); }},
      {"Concat", [](Importer& m, const Node& n) { m.op_concat(n); }},
      {"Split", [](Importer& m, const Node& n) { m.op_split(n); }},
      {"Slice", [](Importer& m, const Node& n) { m.op_slice(n); }},
      {"Gather", [](Importer& m, const Node& n) { m.op_gather(n); }},
      {"Expand", [](Importer& m, const Node& n) { m.op_expand(n); }},
      {"Pad", [](Importer& m, const Node& n) { m.op_pad(n); }},
      {"Resize", [](Importer& m, const Node& n) { m.op_resize(n); }},
      {"Upsample", [](Importer& m, const Node& n) { m.op_resize(n); }},
  };
  return table;
}

Graph Importer::run() {
  read_model();
  const auto& graph = model_.graph();
  g_.source = file_;
  g_.name = utf8_safe(graph.name().empty() ? path_.stem().string() : graph.name());
  std::string producer = utf8_safe(model_.producer_name());
  if (!model_.producer_version().empty()) producer += " " + utf8_safe(model_.producer_version());
  g_.description = "ONNX opset " + std::to_string(opset_) + (producer.empty() ? std::string() : ", from " + producer) +
                   (graph.doc_string().empty() ? std::string() : ": " + utf8_safe(graph.doc_string()));
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& in : graph.node(i).input()) {
      if (in.empty()) continue;
      ++consumers_[in];
      auto& c = consumer_nodes_[in];
      if (c.empty() || c.back() != i) c.push_back(i);
    }
  }
  for (const auto& o : graph.output()) graph_outputs_.insert(o.name());
  for (const auto& t : graph.initializer()) load_initializer(t, "initializer '" + t.name() + "'");
  bind_inputs();
  for (const auto& name : opts_.constant_inputs) {
    auto it = values_.find(name);
    if (it == values_.end()) fail("constant input '" + name + "' is not a graph input");
  }
  g_.default_batch = batch_;

  for (const Node* np : topo_order()) {
    const Node& n = *np;
    bool poisoned = false;
    for (const auto& in : n.input()) {
      if (!in.empty() && values_.count(in) && values_[in].poisoned) poisoned = true;
    }
    if (!poisoned) {
      try {
        dispatch(n);
        check_outputs(n);
      } catch (const Unsupported& u) {
        unsupported_.emplace_back(node_name(n), n.op_type() + (u.why.empty() ? std::string() : ": " + u.why));
        poisoned = true;
      } catch (const ShapeError& e) {
        fail_node(n, e.what());
      }
    }
    if (poisoned) {
      for (const auto& o : n.output()) {
        if (!o.empty()) values_[o].poisoned = true;
      }
    }
  }
  if (!unsupported_.empty()) {
    std::vector<std::string> items;
    for (const auto& [node, why] : unsupported_) items.push_back("'" + utf8_safe(node) + "' (" + utf8_safe(why) + ")");
    fail(std::to_string(unsupported_.size()) + " node(s) cannot be imported: " + join(items, "; ") +
         ". Supported ops: " + join(supported_op_types()) + ", and constant folding of shape computations");
  }

  // Outputs: activations only (a constant output needs no accelerator).
  for (const auto& o : graph.output()) {
    auto it = values_.find(o.name());
    if (it == values_.end() || it->second.constant || it->second.poisoned) continue;
    Value& v = it->second;
    if (v.tensor < 0 && v.graph_input >= 0) continue;  // an input passed straight through
    if (std::find(g_.outputs.begin(), g_.outputs.end(), v.tensor) == g_.outputs.end()) g_.outputs.push_back(v.tensor);
  }
  if (g_.outputs.empty()) fail("the model has no output computed from its inputs (nothing for the accelerator to run)");

  // Dead layers (e.g. unused conversions): drop them and renumber.
  std::vector<bool> used(g_.tensors.size(), false), live(g_.layers.size(), false);
  for (int t : g_.outputs) used[static_cast<size_t>(t)] = true;
  for (size_t i = g_.layers.size(); i-- > 0;) {
    if (!used[static_cast<size_t>(g_.layers[i].output)]) continue;
    live[i] = true;
    for (int t : g_.layers[i].inputs) used[static_cast<size_t>(t)] = true;
  }
  std::vector<int> remap(g_.tensors.size(), -1);
  Graph out;
  out.name = g_.name, out.description = g_.description, out.source = g_.source, out.default_batch = g_.default_batch;
  std::vector<std::pair<int, int>> inputs;  // ONNX order, new tensor id
  for (size_t k = 0; k < g_.inputs.size(); ++k) {
    const int t = g_.inputs[k];
    if (!used[static_cast<size_t>(t)]) continue;
    remap[static_cast<size_t>(t)] = static_cast<int>(out.tensors.size());
    out.tensors.push_back(g_.tensors[static_cast<size_t>(t)]);
    inputs.emplace_back(input_order_[k], remap[static_cast<size_t>(t)]);
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& [order, t] : inputs) out.inputs.push_back(t);
  for (size_t i = 0; i < g_.layers.size(); ++i) {
    if (!live[i]) continue;
    Layer l = g_.layers[i];
    for (int& t : l.inputs) t = remap[static_cast<size_t>(t)];
    const int o = l.output;
    remap[static_cast<size_t>(o)] = static_cast<int>(out.tensors.size());
    Tensor t = g_.tensors[static_cast<size_t>(o)];
    t.producer = static_cast<int>(out.layers.size());
    out.tensors.push_back(std::move(t));
    l.output = remap[static_cast<size_t>(o)];
    out.layers.push_back(std::move(l));
  }
  for (int t : g_.outputs) out.outputs.push_back(remap[static_cast<size_t>(t)]);
  if (out.layers.empty()) fail("the model has no layer for the accelerator to run");

  if (info_) {
    info_->opset = opset_;
    info_->batch = batch_;
    info_->producer = producer;
    for (const auto& [name, v] : values_) {
      if (!v.poisoned) info_->value_shapes[name] = full_dims(v.shape);
    }
  }
  return out;
}

}  // namespace

Graph load_onnx(const std::filesystem::path& path, const OnnxOptions& options, OnnxImportInfo* info) {
  return Importer(path, options, info).run();
}

std::pair<std::string, std::vector<int64_t>> parse_input_shape(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw InputError("--input-shape '" + text + "': expected NAME=d0,d1,... (e.g. input=1,3,224,224)");
  }
  std::pair<std::string, std::vector<int64_t>> out{text.substr(0, eq), {}};
  std::stringstream in(text.substr(eq + 1));
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1) {
      throw InputError("--input-shape '" + text + "': dimension '" + item + "' is not a positive integer");
    }
    out.second.push_back(v);
  }
  return out;
}

std::vector<std::string> Importer::supported_op_types() {
  std::vector<std::string> ops;
  for (const auto& [op, handler] : handler_table()) ops.push_back(op);
  return ops;
}

std::vector<std::string> onnx_supported_ops() { return Importer::supported_op_types(); }

bool is_onnx_path(const std::filesystem::path& path) { return lower(path.extension().string()) == ".onnx"; }

}  // namespace tessera::graph
