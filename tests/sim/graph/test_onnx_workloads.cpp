// The ONNX workload library (generated into the build tree by workloads/onnx/generate_models.py):
// every model imports and compiles; MACs match closed-form counts written here from the
// architectures' definitions and the published figures; every value's shape matches the
// shapes ONNX's own shape inference recorded in the file (value_info).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "sim/common/error.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "sim/graph/onnx_importer.h"
#include "tests/support/run_cli.h"

using namespace tessera;
using namespace tessera::graph;
namespace fs = std::filesystem;

namespace {

fs::path model(const std::string& name) { return fs::path(TESSERA_BINARY_DIR) / "workloads/onnx" / (name + ".onnx"); }

#define NEED_MODEL(name)                                                                              \
  if (!fs::exists(model(name))) GTEST_SKIP() << model(name) << " not generated (needs python3-onnx)"

OnnxOptions bind(std::initializer_list<std::pair<const char*, std::vector<int64_t>>> shapes) {
  OnnxOptions o;
  for (const auto& [n, d] : shapes) o.input_shapes[n] = d;
  return o;
}

// --- closed-form MAC counts, per sample

int64_t resnet50_macs() {
  // conv1 7x7/2 to 112x112x64, maxpool to 56; bottlenecks [3, 4, 6, 3], stride on the 3x3 (v1.5).
  int64_t macs = 112LL * 112 * 7 * 7 * 3 * 64;
  int64_t hw = 56, cin = 64;
  const int64_t blocks[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s) {
    for (int b = 0; b < blocks[s]; ++b) {
      const int64_t w = widths[s], stride = (s > 0 && b == 0) ? 2 : 1, out = hw / stride;
      macs += hw * hw * cin * w;              // 1x1 reduce
      macs += out * out * 9 * w * w;          // 3x3
      macs += out * out * w * 4 * w;          // 1x1 expand
      if (b == 0) macs += out * out * cin * 4 * w;  // projection shortcut
      cin = 4 * w, hw = out;
    }
  }
  return macs + 2048 * 1000;
}

int64_t mobilenet_v2_macs() {
  int64_t macs = 112LL * 112 * 9 * 3 * 32;
  int64_t hw = 112, cin = 32;
  const int64_t cfg[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  for (const auto& c : cfg) {
    for (int64_t i = 0; i < c[2]; ++i) {
      const int64_t stride = i == 0 ? c[3] : 1, hidden = cin * c[0], out = (hw + 2 - 3) / stride + 1;
      if (c[0] != 1) macs += hw * hw * cin * hidden;
      macs += out * out * 9 * hidden;  // depthwise
      macs += out * out * hidden * c[1];
      cin = c[1], hw = out;
    }
  }
  return macs + hw * hw * cin * 1280 + 1280 * 1000;
}

int64_t transformer_macs(int64_t layers, int64_t hidden, int64_t seq, int64_t ctx) {
  // Q, K, V, output projection; QK^T and AV; the 4x FFN.
  return layers * (4 * seq * hidden * hidden + 2 * seq * ctx * hidden + 8 * seq * hidden * hidden);
}

void check_value_shapes(const fs::path& file, const OnnxImportInfo& info, const std::map<std::string, int64_t>& params,
                        int min_compared = 100);

TEST(OnnxWorkloads, Resnet50) {
  NEED_MODEL("resnet50");
  OnnxImportInfo info;
  const Graph g = load_onnx(model("resnet50"), {}, &info);
  EXPECT_EQ(g.total_macs_per_sample(), resnet50_macs());
  EXPECT_NEAR(static_cast<double>(g.total_macs_per_sample()), 4.09e9, 0.01 * 4.09e9);  // torchvision: 4.09 GMACs
  EXPECT_EQ(g.total_weights(), 25502912);  // conv + fc weights (BN folded; biases not counted)
  int conv = 0, fc = 0;
  for (const auto& l : g.layers) {
    conv += l.op == OpKind::kConv2d;
    fc += l.op == OpKind::kFc;
  }
  EXPECT_EQ(conv, 53);
  EXPECT_EQ(fc, 1);
  EXPECT_EQ(info.absorbed.at("/conv1/BatchNormalization"), "batchnorm folded");
  EXPECT_EQ(info.absorbed.at("/conv1/Relu"), "fused");
  check_value_shapes(model("resnet50"), info, {{"batch", 1}});
}

TEST(OnnxWorkloads, MobileNetV2DepthwiseRunsWhereItIsFaster) {
  NEED_MODEL("mobilenet_v2");
  OnnxImportInfo info;
  const Graph g = load_onnx(model("mobilenet_v2"), {}, &info);
  EXPECT_EQ(g.total_macs_per_sample(), mobilenet_v2_macs());
  EXPECT_NEAR(static_cast<double>(g.total_macs_per_sample()), 300e6, 0.01 * 300e6);  // Sandler et al. 2018: 300M
  const ArchConfig tpu = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  const auto p = compiler::compile(g, tpu);
  int depthwise = 0;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    if (g.layers[i].op == OpKind::kConv2d && g.layers[i].groups > 1) {
      ++depthwise;
      EXPECT_EQ(p.layers[i].mapping, "vector") << g.layers[i].name;  // 256 lanes beat 9-row tiles
    }
  }
  EXPECT_EQ(depthwise, 17);
  check_value_shapes(model("mobilenet_v2"), info, {{"batch", 1}});
}

TEST(OnnxWorkloads, BertBase) {
  NEED_MODEL("bert_base");
  OnnxImportInfo info;
  const Graph g = load_onnx(model("bert_base"), bind({{"input_ids", {1, 128}}}), &info);
  const int64_t want = transformer_macs(12, 768, 128, 128) + 768 * 768;  // + pooler
  EXPECT_EQ(g.total_macs_per_sample(), want);
  EXPECT_NEAR(static_cast<double>(want), 11.2e9, 0.02 * 11.2e9);  // ~11 GMACs at 128 tokens, attention included
  int matmul = 0;
  for (const auto& l : g.layers) matmul += l.op == OpKind::kMatmul;
  EXPECT_EQ(matmul, 24);  // QK^T and AV in every layer
  EXPECT_EQ(info.absorbed.at("/embeddings/word_embeddings/Gather"), "host");
  check_value_shapes(model("bert_base"), info, {{"batch", 1}, {"sequence", 128}});
  const ArchConfig tpu = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  const auto p = compiler::compile(g, tpu);
  int ub_tiles = 0;
  for (const auto& in : p.instructions) {
    if (in.op == compiler::Opcode::kReadWeights && in.weight_source == compiler::WeightSource::kUnifiedBuffer) {
      ++ub_tiles;
      EXPECT_EQ(in.bytes, 0u);
      EXPECT_FALSE(in.reads.empty());
    }
  }
  EXPECT_EQ(ub_tiles, 12 * 12 * 2);  // per layer and head: K^T (64x128) and V (128x64), one tile each
}

TEST(OnnxWorkloads, Gpt2PrefillAndDecode) {
  NEED_MODEL("gpt2_prefill");
  NEED_MODEL("gpt2_decode");
  OnnxImportInfo info;
  const Graph pre = load_onnx(model("gpt2_prefill"), bind({{"input_ids", {1, 128}}}), &info);
  EXPECT_EQ(pre.total_macs_per_sample(), transformer_macs(12, 768, 128, 128) + 768 * 50257);
  // Kaplan et al. 2020: forward ~ N + n_layer n_ctx d MACs per token, N = 85M non-embedding
  // weights; plus the LM head for the last token.
  const double kaplan = 128 * (84.93e6 + 12 * 128 * 768) + 768 * 50257.0;
  EXPECT_NEAR(static_cast<double>(pre.total_macs_per_sample()), kaplan, 0.02 * kaplan);
  check_value_shapes(model("gpt2_prefill"), info, {{"batch", 1}, {"sequence", 128}});
  OnnxOptions o;
  o.input_shapes = {{"sequence", {1}}, {"past", {128}}};
  OnnxImportInfo dinfo;
  const Graph dec = load_onnx(model("gpt2_decode"), o, &dinfo);
  EXPECT_EQ(dec.total_macs_per_sample(), transformer_macs(12, 768, 1, 129) + 768 * 50257);
  const double kaplan1 = 84.93e6 + 12 * 129 * 768 + 768 * 50257.0;
  EXPECT_NEAR(static_cast<double>(dec.total_macs_per_sample()), kaplan1, 0.02 * kaplan1);
  EXPECT_EQ(dec.inputs.size(), 1u + 24u);  // the token's embedding and the past keys and values
  check_value_shapes(model("gpt2_decode"), dinfo, {{"batch", 1}, {"sequence", 1}, {"past", 128}, {"past_plus_1", 129}});
}

// Positions and the causal mask come from the input's shape (as HF's export does), so the
// prefill runs at any length up to GPT-2's 1024 learned positions, not only the 128 the file
// was written with.
TEST(OnnxWorkloads, Gpt2PrefillRunsAtAnyLengthUpTo1024) {
  NEED_MODEL("gpt2_prefill");
  for (int64_t seq : {1, 300, 1024}) {
    const Graph g = load_onnx(model("gpt2_prefill"), bind({{"input_ids", {1, seq}}}));
    EXPECT_EQ(g.total_macs_per_sample(), transformer_macs(12, 768, seq, seq) + 768 * 50257) << seq;
  }
  OnnxOptions o;
  o.input_shapes = {{"sequence", {1}}, {"past", {1000}}};
  const Graph dec = load_onnx(model("gpt2_decode"), o);
  EXPECT_EQ(dec.total_macs_per_sample(), transformer_macs(12, 768, 1, 1001) + 768 * 50257);
}

// Llama-style decoder (RMSNorm, rotary, grouped-query attention, SwiGLU), per layer:
// Q and O (H x H), K and V (H x KV*d), QK^T and AV over ctx keys, gate/up/down (H x F); the LM
// head for the last token.
int64_t llama_macs(int64_t L, int64_t H, int64_t A, int64_t KV, int64_t F, int64_t V, int64_t seq, int64_t ctx) {
  const int64_t d = H / A;
  return L * (2 * seq * H * H + 2 * seq * H * KV * d + 2 * A * seq * ctx * d + 3 * seq * H * F) + H * V;
}

TEST(OnnxWorkloads, LlamaTinyPrefillAndDecodeWithGroupedQueryAttention) {
  NEED_MODEL("llama_tiny_prefill");
  NEED_MODEL("llama_tiny_decode");
  OnnxImportInfo info;
  const Graph pre = load_onnx(model("llama_tiny_prefill"), bind({{"input_ids", {1, 32}}}), &info);
  EXPECT_EQ(pre.total_macs_per_sample(), llama_macs(2, 256, 8, 2, 688, 1000, 32, 32));
  check_value_shapes(model("llama_tiny_prefill"), info, {{"batch", 1}, {"sequence", 32}});
  // Another length than the file's: positions, rotary tables and the mask follow the shape.
  const Graph pre100 = load_onnx(model("llama_tiny_prefill"), bind({{"input_ids", {1, 100}}}));
  EXPECT_EQ(pre100.total_macs_per_sample(), llama_macs(2, 256, 8, 2, 688, 1000, 100, 100));
  OnnxOptions o;
  o.input_shapes = {{"sequence", {1}}, {"past", {500}}};
  OnnxImportInfo dinfo;
  const Graph dec = load_onnx(model("llama_tiny_decode"), o, &dinfo);
  EXPECT_EQ(dec.total_macs_per_sample(), llama_macs(2, 256, 8, 2, 688, 1000, 1, 501));
  EXPECT_EQ(dec.inputs.size(), 1u + 4u);  // the token's embedding, the KV cache of each layer
  // The KV cache is real traffic: its per-sample bytes are inputs read from the host.
  int64_t cache_elements = 0;
  for (int t : dec.inputs) {
    if (dec.tensors[static_cast<size_t>(t)].name.find("past_key_values") != std::string::npos) {
      cache_elements += shape_elements(dec.tensors[static_cast<size_t>(t)].shape);
    }
  }
  EXPECT_EQ(cache_elements, 2 * 2 * 2 * 500 * 32);  // layers x {key, value} x KV heads x past x d
  check_value_shapes(model("llama_tiny_decode"), dinfo, {{"batch", 1}, {"sequence", 1}, {"past", 500}, {"past_plus_1", 501}});
}

// ViT-B/16: patch embedding (a 16x16 stride-16 conv), 197 tokens (the class token is
// concatenated from the host), 12 encoder layers, the classifier on the class token.
TEST(OnnxWorkloads, VitB16) {
  NEED_MODEL("vit_b16");
  OnnxImportInfo info;
  const Graph g = load_onnx(model("vit_b16"), {}, &info);
  const int64_t want = 196LL * 768 * 3 * 16 * 16 + transformer_macs(12, 768, 197, 197) + 768 * 1000;
  EXPECT_EQ(g.total_macs_per_sample(), want);
  // timm's model card for vit_base_patch16_224: 17.6 GMACs.
  EXPECT_NEAR(static_cast<double>(want), 17.6e9, 0.01 * 17.6e9);
  check_value_shapes(model("vit_b16"), info, {{"batch", 1}});
}

// YOLOv3-tiny at 416x416, 80 classes (darknet's cfg/yolov3-tiny.cfg): per conv, output
// pixels x k^2 x Cin x Cout. The post-processing runs on the vector unit (box decoding,
// sigmoid, exp, scores, ReduceMax, TopK) and on the host (GatherND, NonMaxSuppression).
int64_t yolov3_tiny_macs() {
  int64_t macs = 0;
  int64_t hw = 416, cin = 3;
  for (int64_t c : {16, 32, 64, 128, 256}) macs += hw * hw * 9 * cin * c, cin = c, hw /= 2;  // conv + 2x2/2 pool
  macs += 13 * 13 * 9 * 256 * 512;    // conv 512, then the 2x2/1 pool keeps 13x13
  macs += 13 * 13 * 9 * 512 * 1024;   // conv 1024
  macs += 13 * 13 * 1024 * 256;       // 1x1 256 (the neck)
  macs += 13 * 13 * 9 * 256 * 512 + 13 * 13 * 512 * 255;  // first head: 3x3 512, 1x1 to 3 x 85
  macs += 13 * 13 * 256 * 128;        // 1x1 128, upsampled to 26x26 and concatenated with the 26x26x256 map
  macs += 26 * 26 * 9 * 384 * 256 + 26 * 26 * 256 * 255;  // second head
  return macs;
}

TEST(OnnxWorkloads, Yolov3TinyWithPostProcessingOnTheHost) {
  NEED_MODEL("yolov3_tiny");
  OnnxImportInfo info;
  const Graph g = load_onnx(model("yolov3_tiny"), {}, &info);
  EXPECT_EQ(yolov3_tiny_macs(), 2782480896);
  EXPECT_EQ(g.total_macs_per_sample(), yolov3_tiny_macs());
  // Darknet's table (pjreddie.com/darknet/yolo): YOLOv3-tiny 5.56 Bn FLOPS, 2 per MAC, convs only.
  EXPECT_NEAR(2.0 * static_cast<double>(g.total_macs_per_sample()), 5.56e9, 0.01 * 5.56e9);
  int conv = 0, topk = 0;
  for (const auto& l : g.layers) conv += l.op == OpKind::kConv2d, topk += l.op == OpKind::kTopK;
  EXPECT_EQ(conv, 13);
  EXPECT_EQ(topk, 1);  // the indices of the 1000 best boxes (its values are not used)
  std::vector<std::string> host;
  for (const auto& h : g.host_ops) host.push_back(h.op);
  EXPECT_EQ(host, (std::vector<std::string>{"GatherND", "GatherND", "Transpose", "NonMaxSuppression"}));
  // The accelerator sends the decoded boxes [2535, 4], the scores [2535, 80] and the TopK indices [1000, 1].
  int64_t sent = 0;
  for (int t : g.outputs) sent += shape_elements(g.tensors[static_cast<size_t>(t)].shape);
  EXPECT_EQ(g.outputs.size(), 3u);
  EXPECT_EQ(sent, 2535 * 4 + 2535 * 80 + 1000);
  EXPECT_EQ(info.absorbed.at("/post/NonMaxSuppression"), "host: reads 'boxes' from '/post/GatherND' (GatherND)");
  EXPECT_EQ(info.absorbed.at("/post/GatherND"), "host: GatherND");
  check_value_shapes(model("yolov3_tiny"), info, {{"batch", 1}});
}

TEST(OnnxWorkloads, LstmSeq2seq) {
  NEED_MODEL("lstm_seq2seq");
  OnnxImportInfo info;
  const Graph g = load_onnx(model("lstm_seq2seq"), {}, &info);
  const int64_t T = 32, H = 512, G = 4 * H;
  const int64_t want = 2 * T * G * (512 + H) + T * G * (2 * H + H) + T * G * (512 + H) + T * H * 32000;
  EXPECT_EQ(g.total_macs_per_sample(), want);
  int lstm = 0;
  for (const auto& l : g.layers) lstm += l.op == OpKind::kLstm;
  EXPECT_EQ(lstm, 3);
  check_value_shapes(model("lstm_seq2seq"), info, {{"batch", 1}}, 30);
  const ArchConfig tpu = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  const auto p = compiler::compile(g, tpu);
  int64_t macs = 0;
  for (const auto& l : p.layers) macs += l.macs;
  EXPECT_EQ(macs, want);
}

TEST(OnnxWorkloads, EveryModelCompilesForTpuV1AtBatch8) {
  const ArchConfig tpu = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  const std::pair<const char*, OnnxOptions> models[] = {
      {"resnet50", {}}, {"mobilenet_v2", {}}, {"bert_base", bind({{"input_ids", {1, 128}}})},
      {"gpt2_prefill", bind({{"input_ids", {1, 128}}})}, {"gpt2_decode", bind({{"sequence", {1}}, {"past", {128}}})},
      {"lstm_seq2seq", {}}, {"llama_tiny_prefill", bind({{"input_ids", {1, 32}}})},
      {"llama_tiny_decode", bind({{"sequence", {1}}, {"past", {32}}})}, {"vit_b16", {}}, {"yolov3_tiny", {}}};
  for (const auto& [name, opts] : models) {
    if (!fs::exists(model(name))) GTEST_SKIP() << "models not generated";
    const Graph g = load_onnx(model(name), opts);
    const auto p = compiler::compile(g, tpu, {.batch = 8});
    int64_t macs = 0;
    for (const auto& l : p.layers) macs += l.macs;
    EXPECT_EQ(macs, 8 * g.total_macs_per_sample()) << name;
    EXPECT_GT(p.instructions.size(), g.layers.size() / 2) << name;
  }
}

// The report names the host work and what it reads; the bytes cross PCIe as outputs.
TEST(OnnxWorkloads, Yolov3TinyReportListsItsHostWork) {
  NEED_MODEL("yolov3_tiny");
  const fs::path out = fs::path(testing::TempDir()) / "yolov3_tiny_report";
  const auto r = tessera_test::run_tessera("run --arch configs/tpu-v1.yaml --workload " + model("yolov3_tiny").string() +
                                           " --batch 2 --out " + out.string() + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out / "report.json");
  const auto report = nlohmann::json::parse(in);
  const auto& ops = report["workload"]["host_ops"];
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0]["node"], "/post/GatherND");
  EXPECT_EQ(ops[0]["op"], "GatherND");
  EXPECT_EQ(ops[0]["reads"].size(), 2u);             // the boxes and the TopK indices
  EXPECT_EQ(ops[0]["bytes_to_host"], 2 * (2535 * 4 + 1000));
  EXPECT_EQ(ops[1]["bytes_to_host"], 2 * (2535 * 80 + 1000));
  EXPECT_EQ(ops[3]["op"], "NonMaxSuppression");
  EXPECT_EQ(ops[3]["bytes_to_host"], 0);             // it reads only what the host computed
  EXPECT_EQ(report["workload"]["host_output_bytes"], 2 * (2535 * 4 + 2535 * 80 + 1000));  // the indices once
  EXPECT_EQ(report["summary"]["macs"], 2 * yolov3_tiny_macs());
}

// The detection network (its host work included) on every shipped architecture.
TEST(OnnxWorkloads, Yolov3TinyCompilesOnEveryShippedConfig) {
  NEED_MODEL("yolov3_tiny");
  const Graph g = load_onnx(model("yolov3_tiny"));
  int configs = 0;
  for (const auto& e : fs::directory_iterator(fs::path(TESSERA_SOURCE_DIR) / "configs")) {
    if (e.path().extension() != ".yaml") continue;
    ++configs;
    const auto p = compiler::compile(g, load_arch_config(e.path().string()), {.batch = 2});
    int64_t macs = 0;
    for (const auto& l : p.layers) macs += l.macs;
    EXPECT_EQ(macs, 2 * yolov3_tiny_macs()) << e.path().filename();
    // Over the host link, or written to device memory on chips whose outputs live there.
    EXPECT_EQ(p.host_output_bytes + p.device_output_bytes, 2u * (2535 * 4 + 2535 * 80 + 1000)) << e.path().filename();  // int8 activations
  }
  EXPECT_GE(configs, 5);
}

// The LLM workloads on every shipped architecture (edge NPU included: spills, several passes).
TEST(OnnxWorkloads, LlamaCompilesOnEveryShippedConfig) {
  NEED_MODEL("llama_tiny_prefill");
  NEED_MODEL("llama_tiny_decode");
  const Graph pre = load_onnx(model("llama_tiny_prefill"), bind({{"input_ids", {1, 64}}}));
  OnnxOptions o;
  o.input_shapes = {{"sequence", {1}}, {"past", {256}}};
  const Graph dec = load_onnx(model("llama_tiny_decode"), o);
  int configs = 0;
  for (const auto& e : fs::directory_iterator(fs::path(TESSERA_SOURCE_DIR) / "configs")) {
    if (e.path().extension() != ".yaml") continue;
    ++configs;
    const ArchConfig arch = load_arch_config(e.path().string());
    for (const Graph* g : {&pre, &dec}) {
      const auto p = compiler::compile(*g, arch, {.batch = 2});
      int64_t macs = 0;
      for (const auto& l : p.layers) macs += l.macs;
      EXPECT_EQ(macs, 2 * g->total_macs_per_sample()) << e.path().filename() << " " << g->name;
    }
  }
  EXPECT_GE(configs, 5);
}

}  // namespace

// ONNX's shape inference results, stored by the generator as value_info: every value we
// inferred must agree on every dimension ONNX knows (named dims bound from `params`).
#include <onnx/onnx_pb.h>

#include <fstream>

namespace {
void check_value_shapes(const fs::path& file, const OnnxImportInfo& info, const std::map<std::string, int64_t>& params,
                        int min_compared) {
  onnx::ModelProto m;
  std::ifstream f(file, std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&f));
  int compared = 0;
  for (const auto& vi : m.graph().value_info()) {
    auto it = info.value_shapes.find(vi.name());
    if (it == info.value_shapes.end() || !vi.type().tensor_type().has_shape()) continue;
    const auto& dims = vi.type().tensor_type().shape().dim();
    ASSERT_EQ(static_cast<int>(it->second.size()), dims.size()) << vi.name();
    for (int d = 0; d < dims.size(); ++d) {
      int64_t want = -1;
      if (dims[d].has_dim_value()) want = dims[d].dim_value();
      else if (dims[d].has_dim_param() && params.count(dims[d].dim_param())) want = params.at(dims[d].dim_param());
      if (want < 0) continue;
      EXPECT_EQ(it->second[static_cast<size_t>(d)], want) << file.filename() << ": " << vi.name() << " dim " << d;
      ++compared;
    }
  }
  EXPECT_GE(compared, min_compared) << file.filename() << ": too few shapes to compare (value_info missing?)";
}
}  // namespace
