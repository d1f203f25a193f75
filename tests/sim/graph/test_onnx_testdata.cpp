// The importer against ONNX's own test models (Debian's libonnx-testdata): for every
// model, the shapes we infer for its outputs must equal the shapes ONNX records in the
// model, and the IR tensors must hold the same number of elements per sample.
//
// The node tests feed weights (and shape tensors) as graph inputs with their values in
// test_data_set_0/input_N.pb; the test turns every input but the activations into an
// initializer holding that data, as an exporter would have written it.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "sim/common/error.h"
#include "sim/graph/onnx_importer.h"

using namespace tessera;
using namespace tessera::graph;
namespace fs = std::filesystem;

namespace {

const fs::path kData = "/usr/share/libonnx-testdata/data";

struct Case {
  const char* dir;       // under kData
  int activations = 1;   // the first N graph inputs are activations; the rest become initializers
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.dir; }

onnx::ModelProto read_model(const fs::path& p) {
  onnx::ModelProto m;
  std::ifstream f(p, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&f)) << p;
  return m;
}

// Writes the model with inputs [activations..] kept and the others made initializers.
fs::path prepare(const Case& c, onnx::ModelProto& model) {
  const fs::path dir = kData / c.dir;
  model = read_model(dir / "model.onnx");
  auto* g = model.mutable_graph();
  std::set<std::string> inits;
  for (const auto& t : g->initializer()) inits.insert(t.name());
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> keep;
  int k = 0;  // index among the real (non-initializer) inputs
  for (int i = 0; i < g->input_size(); ++i) {
    const auto& in = g->input(i);
    if (inits.count(in.name())) continue;
    if (k < c.activations) {
      *keep.Add() = in;
    } else {
      onnx::TensorProto t;
      std::ifstream f(dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"), std::ios::binary);
      EXPECT_TRUE(t.ParseFromIstream(&f)) << c.dir << " input " << k;
      t.set_name(in.name());
      *g->add_initializer() = t;
    }
    ++k;
  }
  *g->mutable_input() = keep;
  const fs::path out = fs::path(testing::TempDir()) / (std::string(fs::path(c.dir).filename()) + ".onnx");
  std::ofstream f(out, std::ios::binary);
  model.SerializeToOstream(&f);
  return out;
}

class OnnxTestData : public testing::TestWithParam<Case> {};

TEST_P(OnnxTestData, InferredShapesMatchTheModel) {
  const Case& c = GetParam();
  if (!fs::exists(kData / c.dir / "model.onnx")) GTEST_SKIP() << "libonnx-testdata is not installed";
  onnx::ModelProto model;
  const fs::path file = prepare(c, model);
  OnnxImportInfo info;
  Graph g;
  try {
    g = load_onnx(file, {}, &info);
  } catch (const InputError& e) {
    FAIL() << c.dir << ": " << e.what();
  }
  ASSERT_FALSE(g.layers.empty());
  for (const auto& o : model.graph().output()) {
    std::vector<int64_t> want;
    for (const auto& d : o.type().tensor_type().shape().dim()) want.push_back(d.dim_value());
    ASSERT_TRUE(info.value_shapes.count(o.name())) << c.dir << ": no shape for output " << o.name();
    EXPECT_EQ(info.value_shapes[o.name()], want) << c.dir << ": output " << o.name();
  }
  // IR outputs hold the same elements per sample as the ONNX outputs.
  int64_t onnx_elems = 0, ir_elems = 0;
  for (const auto& o : model.graph().output()) {
    int64_t n = 1;
    for (int64_t d : info.value_shapes[o.name()]) n *= d;
    onnx_elems += n;
  }
  for (int t : g.outputs) ir_elems += shape_elements(g.tensors[static_cast<size_t>(t)].shape) * g.default_batch;
  EXPECT_EQ(ir_elems, onnx_elems) << c.dir;
  for (const auto& l : g.layers) EXPECT_GE(l.macs_per_sample(), 0) << l.name;
}

// Left out on purpose (the importer reports them, by node, as unsupported or as models that
// do nothing on the accelerator): models that slice, split, squeeze, gather or reverse along
// the batch (test_slice_neg_steps, test_squeeze, test_operator_chunk, test_gather_*), whose
// weights span the batch (test_operator_params, test_operator_add_size1_broadcast), and pure
// aliases with no layer to run (test_transpose_all_permutations_0/2/3, test_operator_view,
// test_operator_permute2, test_expand_shape_model1); of the ops added for issue 15, those that
// work along the batch: tile (test_tile*, repeats the batch), 1-D cumsum (test_cumsum_1d*),
// single-operand and batch-contracting Einsum (test_einsum_transpose, _inner_prod, _sum,
// _batch_diagonal), reductions over every axis at batch 3 (test_reduce_*_default_axes_*),
// the ArgMax/ArgMin default axis 0 (test_arg*_default_axis_*); of the quantized ops,
// test_qlinearmatmul_3D (weights batched along the batch) and test_dynamicquantizelinear*
// (its scale and zero point are parameters of the layers that read them, not IR outputs:
// tests/sim/graph/test_onnx_quantized.cpp checks them).
const Case kCases[] = {
    // Convolutions
    {"node/test_basic_conv_with_padding"}, {"node/test_basic_conv_without_padding"}, {"node/test_conv_with_autopad_same"},
    {"node/test_conv_with_strides_and_asymmetric_padding"}, {"node/test_conv_with_strides_no_padding"},
    {"node/test_conv_with_strides_padding"}, {"node/test_convtranspose"}, {"node/test_convtranspose_1d"},
    {"node/test_convtranspose_autopad_same"}, {"node/test_convtranspose_dilations"}, {"node/test_convtranspose_kernel_shape"},
    {"node/test_convtranspose_output_shape"}, {"node/test_convtranspose_pad"}, {"node/test_convtranspose_pads"},
    {"pytorch-converted/test_Conv1d"}, {"pytorch-converted/test_Conv1d_dilated"}, {"pytorch-converted/test_Conv1d_groups"},
    {"pytorch-converted/test_Conv1d_pad1"}, {"pytorch-converted/test_Conv1d_pad2"}, {"pytorch-converted/test_Conv1d_stride"},
    {"pytorch-converted/test_Conv2d"}, {"pytorch-converted/test_Conv2d_depthwise"},
    {"pytorch-converted/test_Conv2d_depthwise_padded"}, {"pytorch-converted/test_Conv2d_depthwise_strided"},
    {"pytorch-converted/test_Conv2d_depthwise_with_multiplier"}, {"pytorch-converted/test_Conv2d_dilated"},
    {"pytorch-converted/test_Conv2d_groups"}, {"pytorch-converted/test_Conv2d_groups_thnn"},
    {"pytorch-converted/test_Conv2d_no_bias"}, {"pytorch-converted/test_Conv2d_padding"},
    {"pytorch-converted/test_Conv2d_strided"}, {"pytorch-converted/test_ConvTranspose2d"},
    {"pytorch-converted/test_ConvTranspose2d_no_bias"}, {"pytorch-operator/test_operator_conv"},
    {"pytorch-operator/test_operator_convtranspose"},
    // Gemm / MatMul
    {"node/test_gemm_default_matrix_bias"}, {"node/test_gemm_default_no_bias"}, {"node/test_gemm_default_scalar_bias"},
    {"node/test_gemm_default_single_elem_vector_bias"}, {"node/test_gemm_default_vector_bias"},
    {"node/test_gemm_default_zero_bias"}, {"node/test_gemm_transposeA"}, {"node/test_gemm_transposeB"},
    {"node/test_gemm_alpha"}, {"node/test_gemm_beta"}, {"node/test_gemm_all_attributes"},
    {"node/test_matmul_2d"}, {"node/test_matmul_3d", 2}, {"node/test_matmul_4d", 2},
    {"pytorch-converted/test_Linear"}, {"pytorch-converted/test_Linear_no_bias"},
    // Recurrent
    {"node/test_lstm_defaults"}, {"node/test_lstm_with_initial_bias"}, {"node/test_lstm_batchwise"},
    {"node/test_lstm_with_peepholes"}, {"node/test_gru_defaults"}, {"node/test_gru_with_initial_bias"},
    {"node/test_gru_seq_length"}, {"node/test_gru_batchwise"},
    // Pooling
    {"node/test_averagepool_1d_default"}, {"node/test_averagepool_2d_ceil"}, {"node/test_averagepool_2d_default"},
    {"node/test_averagepool_2d_pads"}, {"node/test_averagepool_2d_pads_count_include_pad"},
    {"node/test_averagepool_2d_precomputed_pads"}, {"node/test_averagepool_2d_precomputed_same_upper"},
    {"node/test_averagepool_2d_precomputed_strides"}, {"node/test_averagepool_2d_same_lower"},
    {"node/test_averagepool_2d_same_upper"}, {"node/test_averagepool_2d_strides"}, {"node/test_maxpool_1d_default"},
    {"node/test_maxpool_2d_ceil"}, {"node/test_maxpool_2d_default"}, {"node/test_maxpool_2d_dilations"},
    {"node/test_maxpool_2d_pads"}, {"node/test_maxpool_2d_precomputed_pads"}, {"node/test_maxpool_2d_precomputed_same_upper"},
    {"node/test_maxpool_2d_precomputed_strides"}, {"node/test_maxpool_2d_same_lower"}, {"node/test_maxpool_2d_same_upper"},
    {"node/test_maxpool_2d_strides"}, {"node/test_globalaveragepool"}, {"node/test_globalmaxpool"},
    {"pytorch-converted/test_AvgPool1d"}, {"pytorch-converted/test_AvgPool2d"}, {"pytorch-converted/test_AvgPool2d_stride"},
    {"pytorch-converted/test_MaxPool1d"}, {"pytorch-converted/test_MaxPool1d_stride"}, {"pytorch-converted/test_MaxPool2d"},
    {"pytorch-converted/test_MaxPool2d_stride_padding_dilation"}, {"pytorch-operator/test_operator_maxpool"},
    // Normalisation
    {"node/test_batchnorm_epsilon"}, {"node/test_batchnorm_example"}, {"pytorch-converted/test_BatchNorm2d_eval"},
    {"pytorch-converted/test_BatchNorm1d_3d_input_eval"}, {"node/test_layer_normalization_2d_axis1"},
    {"node/test_layer_normalization_3d_axis1_epsilon"}, {"node/test_layer_normalization_4d_axis1"},
    {"node/test_layer_normalization_4d_axis_negative_1"}, {"node/test_layer_normalization_default_axis"},
    {"node/test_layer_normalization_3d_axis2_epsilon_expanded"}, {"node/test_layer_normalization_4d_axis2_expanded"},
    {"node/test_reduce_mean_keepdims_example"}, {"node/test_reduce_mean_do_not_keepdims_example"},
    {"node/test_reduce_mean_negative_axes_keepdims_example"}, {"pytorch-operator/test_operator_reduced_mean_keepdim"},
    {"pytorch-operator/test_operator_reduced_sum"},
    // Activations and element-wise
    {"node/test_relu"}, {"node/test_sigmoid"}, {"node/test_tanh"}, {"node/test_clip"}, {"node/test_clip_default_min"},
    {"node/test_clip_splitbounds"}, {"node/test_leakyrelu"}, {"node/test_hardsigmoid"}, {"node/test_hardswish"},
    {"node/test_erf"}, {"node/test_sqrt"}, {"node/test_add", 2}, {"node/test_add_bcast"}, {"node/test_sub", 2},
    {"node/test_sub_bcast"}, {"node/test_mul", 2}, {"node/test_mul_bcast"}, {"node/test_div", 2}, {"node/test_div_bcast"},
    {"node/test_pow", 2}, {"node/test_pow_bcast_array"}, {"node/test_pow_bcast_scalar"},
    {"pytorch-converted/test_ReLU"}, {"pytorch-converted/test_Sigmoid"}, {"pytorch-converted/test_Tanh"},
    {"pytorch-converted/test_LeakyReLU"}, {"pytorch-operator/test_operator_basic", 2},{"pytorch-operator/test_operator_exp"},
    {"pytorch-operator/test_operator_sqrt"}, {"pytorch-operator/test_operator_pow", 2},
    {"pytorch-operator/test_operator_max", 2}, {"pytorch-operator/test_operator_min", 2},
    {"pytorch-operator/test_operator_clip"}, {"pytorch-operator/test_operator_addconstant"},
    {"pytorch-operator/test_operator_add_broadcast"}, 
    // Softmax
    {"node/test_softmax_axis_1"}, {"node/test_softmax_axis_2"}, {"node/test_softmax_default_axis"},
    {"node/test_softmax_negative_axis"}, {"node/test_softmax_example"}, {"node/test_logsoftmax_axis_1"},
    {"pytorch-converted/test_Softmax"}, {"pytorch-converted/test_LogSoftmax"},
    {"pytorch-converted/test_softmax_lastdim"}, {"pytorch-converted/test_log_softmax_dim3"},
    // Layout
    {"node/test_concat_2d_axis_1", 2}, {"node/test_concat_3d_axis_1", 2}, {"node/test_concat_3d_axis_2", 2},
    {"node/test_concat_3d_axis_negative_1", 2}, {"node/test_split_equal_parts_2d"}, {"node/test_split_variable_parts_2d"},
    {"node/test_slice_neg"}, {"node/test_slice_default_axes"}, {"node/test_slice_negative_axes"},
    {"node/test_slice_end_out_of_bounds"}, {"node/test_transpose_default"},
     {"node/test_transpose_all_permutations_1"},
    {"node/test_transpose_all_permutations_4"}, {"node/test_transpose_all_permutations_5"},
    {"node/test_reshape_extended_dims"}, {"node/test_reshape_negative_dim"}, {"node/test_reshape_negative_extended_dims"},
    {"node/test_reshape_one_dim"}, {"node/test_reshape_reduced_dims"}, {"node/test_reshape_reordered_last_dims"},
    {"node/test_reshape_zero_and_negative_dim"}, {"node/test_reshape_zero_dim"}, {"node/test_flatten_axis1"},
    {"node/test_flatten_axis2"}, {"node/test_flatten_axis3"}, {"node/test_flatten_default_axis"},
    {"node/test_flatten_negative_axis1"}, {"node/test_squeeze_negative_axes"},
    {"node/test_unsqueeze_axis_1"}, {"node/test_unsqueeze_axis_2"}, {"node/test_unsqueeze_axis_3"},
    {"node/test_unsqueeze_two_axes"}, {"node/test_unsqueeze_unsorted_axes"}, {"node/test_constant_pad"},
    {"node/test_edge_pad"}, {"node/test_reflect_pad"}, {"pytorch-converted/test_ZeroPad2d"},
    {"pytorch-converted/test_ConstantPad2d"}, {"pytorch-converted/test_ReflectionPad2d"},
    {"pytorch-converted/test_ReplicationPad2d"}, {"pytorch-converted/test_PixelShuffle"},
    {"pytorch-converted/test_GLU"}, {"pytorch-converted/test_GLU_dim"}, {"pytorch-operator/test_operator_flatten"},
    {"pytorch-operator/test_operator_concat2", 2},
    {"pytorch-operator/test_operator_pad"}, {"node/test_resize_upsample_scales_nearest"},
    {"node/test_resize_upsample_scales_linear"}, {"node/test_resize_upsample_sizes_nearest"},
    {"node/test_resize_downsample_scales_linear"}, {"node/test_resize_downsample_sizes_linear_pytorch_half_pixel"},
    {"node/test_resize_upsample_scales_cubic"},
    // Issue 15: element-wise, comparison, scan and selection ops
    {"node/test_abs"}, {"node/test_ceil"}, {"node/test_floor"}, {"node/test_log"}, {"node/test_neg"}, {"node/test_reciprocal"},
    {"node/test_round"}, {"node/test_sign"}, {"node/test_exp"}, {"node/test_not_2d"}, {"node/test_not_3d"},
    {"node/test_and2d", 2}, {"node/test_and3d", 2}, {"node/test_and_bcast4v3d"}, {"node/test_or2d", 2},
    {"node/test_or_bcast3v2d"}, {"node/test_equal", 2}, {"node/test_equal_bcast"}, {"node/test_greater", 2},
    {"node/test_greater_bcast"}, {"node/test_greater_equal", 2}, {"node/test_greater_equal_bcast"}, {"node/test_less", 2},
    {"node/test_less_bcast"}, {"node/test_less_equal", 2}, {"node/test_less_equal_bcast"},
    {"node/test_mod_broadcast"}, {"node/test_mod_mixed_sign_float32", 2}, {"node/test_mod_mixed_sign_int32", 2},
    {"node/test_max_two_inputs", 2}, {"node/test_min_two_inputs", 2}, {"node/test_where_example", 3},
    {"node/test_where_long_example", 3}, {"node/test_clip_example"}, {"node/test_clip_inbounds"},
    {"node/test_clip_outbounds"}, {"node/test_cumsum_2d_axis_1"}, {"node/test_cumsum_2d_negative_axis"},
    {"node/test_argmax_keepdims_example"}, {"node/test_argmax_no_keepdims_example"},
    {"node/test_argmax_negative_axis_keepdims_example"}, {"node/test_argmax_keepdims_example_select_last_index"},
    {"node/test_argmin_keepdims_example"}, {"node/test_argmin_no_keepdims_random"}, {"node/test_top_k"},
    {"node/test_top_k_smallest"}, {"node/test_top_k_negative_axis"}, {"node/test_einsum_batch_matmul", 2},
    {"node/test_max_example", 3}, {"node/test_min_example", 3},
    // Issue 15: quantized graphs
    {"node/test_quantizelinear"}, {"node/test_quantizelinear_axis"}, {"node/test_dequantizelinear"},
    {"node/test_dequantizelinear_axis"}, {"node/test_qlinearconv"}, {"node/test_qlinearmatmul_2D"},
    {"node/test_convinteger_with_padding"}, {"node/test_convinteger_without_padding"}, {"node/test_matmulinteger"},
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string n = info.param.dir;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Models, OnnxTestData, testing::ValuesIn(kCases), case_name);

}  // namespace
