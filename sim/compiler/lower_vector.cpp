// Vector-unit layers, and the array-or-vector choice for grouped convs.
#include "sim/compiler/lowering.h"

#include "sim/graph/ops/registry.h"

namespace tessera::compiler::detail {

// A grouped (e.g. depthwise) conv runs either group by group on the array or as
// multiply-accumulates on the vector unit; the estimate of each picks the faster.
bool VectorLowering::grouped_conv_on_vector(const Layer& layer) const {
  if (layer.op != OpKind::kConv2d || layer.gemm_groups <= 1) return false;
  const auto& a = l_.arch_.array;
  const array::ArrayDims dims{a.rows, a.cols};
  const int64_t M = l_.batch_ * layer.gemm_m_per_sample, K = layer.gemm_k, N = layer.gemm_n, G = layer.gemm_groups;
  const array::GemmTile max = l_.gemm_.max_tile();
  const MacMode* mode = a.find_mode(l_.g_.tensors[layer.inputs[0]].dtype, layer.weight_dtype);
  const double rate = mode ? mode->rate : 1.0;
  // Array: one group's tiles through the array's own pipeline model (fill, drain and
  // double buffering per dataflow), paced by the MAC mode and the UB read port; the
  // activates run on the vector unit alongside. Every group is alike.
  array::ArrayPipeline pipe(a.dataflow, dims, a.double_buffered);
  const int64_t a_bytes = dtype_bytes(l_.g_.tensors[layer.inputs[0]].dtype);
  double activate_cycles = 0;
  for (int64_t m0 = 0; m0 < M; m0 += max.m) {
    const int64_t m = std::min(max.m, M - m0);
    for (int64_t n0 = 0; n0 < N; n0 += max.n) {
      const int64_t n = std::min(max.n, N - n0);
      for (int64_t k0 = 0; k0 < K; k0 += max.k) {
        const int64_t k = std::min(max.k, K - k0);
        const array::GemmTile tile{m, k, n};
        const auto t = array::tile_timing(a.dataflow, dims, tile);
        const array::MatmulCost cost =
            array::matmul_cost(array::dataflow_model(a.dataflow), dims, t, rate, m * k * a_bytes,
                               l_.arch_.unified_buffer.read_bytes_per_cycle, l_.arch_.weight_memory.fetch == WeightFetch::kTile,
                               l_.arch_.ideal_memory);
        pipe.issue(tile, 0, 0, cost.stream_cycles(), cost.min_preload_cycles);
      }
      activate_cycles += static_cast<double>(ceil_div(m * n, l_.arch_.vector_unit.values_per_cycle()) + l_.arch_.vector_unit.pipeline_latency_cycles);
    }
  }
  double array_cycles = static_cast<double>(pipe.last_done());
  array_cycles = std::max(array_cycles, activate_cycles) * static_cast<double>(G);
  // Vector unit: the MACs on its lanes, or the unified-buffer traffic if that is slower.
  const int64_t in_bytes = l_.batch_ * graph::shape_elements(l_.g_.tensors[layer.inputs[0]].shape) * a_bytes;
  const int64_t out_bytes = l_.batch_ * graph::shape_elements(l_.g_.tensors[layer.output].shape) * dtype_bytes(l_.g_.tensors[layer.output].dtype);
  const int64_t chunks = ceil_div(l_.batch_, std::max<int64_t>(1, l_.samples_per_chunk(layer.output)));
  // Each MAC takes as many 8-bit lanes as its widest operand has bytes (as emit() sets element_bytes).
  const int64_t element_bytes = std::max({a_bytes, dtype_bytes(layer.weight_dtype), dtype_bytes(l_.g_.tensors[layer.output].dtype)});
  // (ideal_memory: the buffer's ports pace nothing, as in the vector unit's model.)
  const int64_t ub_cycles = l_.arch_.ideal_memory ? 0
                                               : std::max(ceil_div(in_bytes, l_.arch_.unified_buffer.read_bytes_per_cycle),
                                                          ceil_div(out_bytes, l_.arch_.unified_buffer.write_bytes_per_cycle));
  const double vector_cycles = static_cast<double>(
      std::max(l_.arch_.vector_unit.element_cycles(G * M * K * N, element_bytes, VectorClass::kArithmetic), ub_cycles) +
      chunks * l_.arch_.vector_unit.pipeline_latency_cycles);
  return vector_cycles < array_cycles;
}

void VectorLowering::lower_grouped_conv_on_vector(int li) {
  const Layer& layer = l_.g_.layers[li];
  const int x = layer.inputs[0], y = layer.output;
  LayerInfo& info = l_.p_.layers[li];
  info.mapping = "vector";
  // The weights are an operand too: their bytes set the element width (emit widens to the tensors').
  emit_vector_by_samples(li, graph::op_def(OpKind::kConv2d), {x}, y, layer.macs_per_sample(),
                         dtype_bytes(layer.weight_dtype));  // grouped_conv
  // The weights (kernel x channels, a few KiB) are not modelled as weight-memory traffic here.
  MatrixLowering(l_).account_gemm(li, l_.batch_ * layer.gemm_m_per_sample * layer.gemm_groups, layer.gemm_k, layer.gemm_n,
               layer.gemm_groups, layer.weight_count(), l_.g_.tensors[x].dtype, layer.weight_dtype);
}

// Element operations per output element of a vector layer (the vector unit does one
// element operation per lane per cycle): from the op's OpDef.
int64_t VectorLowering::vector_work_per_output(const Layer& layer) const {
  const graph::OpDef& def = graph::op_def(layer.op);
  return def.work_per_output ? def.work_per_output(l_.g_, layer) : 1;
}

void VectorLowering::lower_vector(int li) {
  const Layer& layer = l_.g_.layers[li];
  const int y = layer.output;
  LayerInfo& info = l_.p_.layers[li];
  if (graph::is_layout_op(layer.op)) {  // flatten / reshape: an alias, nothing moves
    info.mapping = "alias";
    return;
  }
  info.mapping = "vector";
  info.a_dtype = info.b_dtype = l_.g_.tensors[y].dtype;
  emit_vector_by_samples(li, graph::op_def(layer.op), layer.inputs, y,
                         graph::shape_elements(l_.g_.tensors[y].shape) * vector_work_per_output(layer));
}

// One vector instruction per chunk of samples: `inputs`' samples in, y's out.
void VectorLowering::emit_vector_by_samples(int li, const graph::OpDef& op, const std::vector<int>& inputs, int y,
                                      int64_t elements_per_sample, int64_t element_bytes) {
  const int64_t chunk = l_.samples_per_chunk(y);
  for (int64_t s0 = 0; s0 < l_.batch_; s0 += chunk) {
    const int64_t s1 = std::min(l_.batch_, s0 + chunk);
    Instruction v;
    v.op = Opcode::kVector;
    v.layer = li;
    v.vector_function = op.listing_name();
    v.vector_class = op.vector_class;
    v.elements = (s1 - s0) * elements_per_sample;
    v.element_bytes = element_bytes;
    for (int in : inputs) {
      v.reads.push_back(l_.region(in, s0, s1));
      v.ub_read_bytes += l_.tensor_bytes(in, s1 - s0);
    }
    v.writes.push_back(l_.region(y, s0, s1));
    v.ub_write_bytes = l_.tensor_bytes(y, s1 - s0);
    v.ub_address = l_.place_[l_.storage(y)].offset;
    l_.emit(std::move(v));
  }
}

}  // namespace tessera::compiler::detail
