// Which axis of a graph input holds the batch, from how the input is used (before any
// node is imported): the input's axes are followed forward through the ops that keep
// track of them until an op that says which of its operand's axes is the batch.
// A recurrent state [layers, batch, hidden] passed through Gather into an LSTM has its
// batch on axis 1, not on the first axis that the default would take.
#include <algorithm>
#include <cstring>
#include <deque>

#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

namespace {

// Integer elements stored inline in a tensor (raw little-endian bytes or the typed field).
std::vector<int64_t> inline_ints(const onnx::TensorProto& t) {
  std::vector<int64_t> out;
  constexpr int kMax = 64;
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return out;
  if (t.data_type() == onnx::TensorProto_DataType_INT64) {
    if (t.int64_data_size() > 0) {
      if (t.int64_data_size() <= kMax) out.assign(t.int64_data().begin(), t.int64_data().end());
    } else if (t.raw_data().size() % 8 == 0 && t.raw_data().size() <= 8 * kMax) {
      for (size_t i = 0; i < t.raw_data().size(); i += 8) {
        int64_t v;
        std::memcpy(&v, t.raw_data().data() + i, 8);
        out.push_back(v);
      }
    }
  } else if (t.data_type() == onnx::TensorProto_DataType_INT32) {
    if (t.int32_data_size() > 0) {
      if (t.int32_data_size() <= kMax) out.assign(t.int32_data().begin(), t.int32_data().end());
    } else if (t.raw_data().size() % 4 == 0 && t.raw_data().size() <= 4 * kMax) {
      for (size_t i = 0; i < t.raw_data().size(); i += 4) {
        int32_t v;
        std::memcpy(&v, t.raw_data().data() + i, 4);
        out.push_back(v);
      }
    }
  }
  return out;
}

// A small integer tensor known from the file alone (an initializer or a Constant node, in
// any graph): its rank and values (values empty when they are not stored inline).
std::optional<std::pair<int, std::vector<int64_t>>> file_ints(const UseIndex& index, const std::string& name) {
  if (auto t = index.tensors.find(name); t != index.tensors.end()) return std::make_pair(t->second->dims_size(), inline_ints(*t->second));
  auto c = index.constants.find(name);
  if (c == index.constants.end()) return std::nullopt;
  for (const auto& a : c->second->attribute()) {
    if (a.name() == "value_int") return std::make_pair(0, std::vector<int64_t>{a.i()});
    if (a.name() == "value_ints") return std::make_pair(1, std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  }
  return std::nullopt;
}

void index_graph(const onnx::GraphProto& g, UseIndex& index, int depth) {
  if (depth > 64) return;  // deeper nesting is not followed
  for (const auto& t : g.initializer()) index.tensors.emplace(t.name(), &t);
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) {
      if (!in.empty()) index.readers[in].push_back(&n);
    }
    if (n.op_type() == "Constant" && n.output_size() > 0) {
      index.constants.emplace(n.output(0), &n);
      for (const auto& a : n.attribute()) {
        if (a.name() == "value" && a.has_t()) index.tensors.emplace(n.output(0), &a.t());
      }
    }
    for (const auto& a : n.attribute()) {
      if (!a.has_g()) continue;
      index_graph(a.g(), index, depth + 1);
      if (n.op_type() != "If") continue;
      for (int k = 0; k < a.g().output_size() && k < n.output_size(); ++k) {
        if (!n.output(k).empty()) index.flows[a.g().output(k).name()].push_back(n.output(k));
      }
    }
  }
}

}  // namespace

UseIndex::UseIndex(const onnx::GraphProto& main) { index_graph(main, *this, 0); }

int UseIndex::usage_batch_axis(const std::string& input, int rank, bool& strong) const {
  const UseIndex& index = *this;
  // A value the input reaches, with the input's axis at each of its axes (-1: none), and
  // whether its axes were permuted on the way (then a first-axis reader says nothing).
  // A value may be reached with several axis maps (e.g. through both branches of an If
  // that adds an axis in one of them): each is followed, and an op checks the rank it needs.
  struct Reach {
    std::string value;
    std::vector<int> axes;
    bool permuted = false;
  };
  std::deque<Reach> queue;
  Reach start{input, {}, false};
  for (int i = 0; i < rank; ++i) start.axes.push_back(i);
  auto key = [](const Reach& r) {
    std::string k = r.value + (r.permuted ? "\x01T" : "\x01");
    for (int a : r.axes) k += std::to_string(a) + ",";
    return k;
  };
  std::unordered_set<std::string> seen = {key(start)};
  queue.push_back(std::move(start));
  int weak = -1;
  constexpr int kMaxReached = 256;  // values (with their axis maps) visited per input: uses are found near it
  int visited = 0;
  auto reach = [&](const std::string& value, std::vector<int> axes, bool permuted) {
    Reach r{value, std::move(axes), permuted};
    if (seen.insert(key(r)).second) queue.push_back(std::move(r));
  };
  while (!queue.empty() && visited++ < kMaxReached) {
    const Reach r = std::move(queue.front());
    queue.pop_front();
    if (auto f = index.flows.find(r.value); f != index.flows.end()) {
      for (const auto& out : f->second) reach(out, r.axes, r.permuted);  // a branch's result is the If's
    }
    const auto c = index.readers.find(r.value);
    if (c == index.readers.end()) continue;
    const int rk = static_cast<int>(r.axes.size());
    const auto at = [&](int axis) { return axis >= 0 && axis < rk ? r.axes[static_cast<size_t>(axis)] : -1; };
    for (const onnx::NodeProto* np : c->second) {
      const onnx::NodeProto& n = *np;
      if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
      const OnnxOp* row = find_onnx_op(n.op_type());
      const BatchRule rule = row ? row->batch : BatchRule::kStops;
      for (int pos = 0; pos < n.input_size(); ++pos) {
        if (n.input(pos) != r.value) continue;
        // Ops that say where the batch is.
        if (rule == BatchRule::kRecurrent) {
          const auto* l = attr(n, "layout");
          const int layout = l && l->type() == onnx::AttributeProto_AttributeType_INT ? static_cast<int>(l->i()) : 0;
          // X [T, batch, I] and the initial states [directions, batch, hidden] (layout 0).
          if ((pos == 0 || pos == 5 || pos == 6) && rk == 3 && at(layout == 0 ? 1 : 0) >= 0) {
            strong = true;
            return at(layout == 0 ? 1 : 0);
          }
          continue;
        }
        if (rule == BatchRule::kGemm && pos == 0) {
          const auto* t = attr(n, "transA");
          if (t && t->type() == onnx::AttributeProto_AttributeType_INT && t->i() != 0) {
            if (rk == 2 && at(1) >= 0) {
              strong = true;
              return at(1);
            }
            continue;
          }
        }
        if ((rule == BatchRule::kFirstAxis || rule == BatchRule::kGemm) && pos == 0) {
          if (weak < 0 && !r.permuted && rk >= 2 && at(0) >= 0) weak = at(0);
          continue;
        }
        // Ops that carry the axes through.
        std::vector<int> out;
        bool permuted = r.permuted;
        if (rule == BatchRule::kKeeps || rule == BatchRule::kKeepsAll || rule == BatchRule::kSplits) {
          if (pos > 0 && rule != BatchRule::kKeepsAll) continue;  // a slice bound, a clip limit, a pad width
          out = r.axes;
        } else if (rule == BatchRule::kGather && pos == 0) {
          const auto* a = attr(n, "axis");
          int64_t axis = a ? a->i() : 0;
          const auto idx_info = n.input_size() > 1 ? file_ints(index, n.input(1)) : std::nullopt;
          if (!idx_info || axis < -rk || axis >= rk) continue;
          if (axis < 0) axis += rk;
          out.assign(r.axes.begin(), r.axes.begin() + axis);
          out.insert(out.end(), static_cast<size_t>(idx_info->first), -1);
          out.insert(out.end(), r.axes.begin() + axis + 1, r.axes.end());
        } else if ((rule == BatchRule::kSqueeze || rule == BatchRule::kUnsqueeze) && pos == 0) {
          const bool squeeze = rule == BatchRule::kSqueeze;
          std::vector<int64_t> axes;
          if (const auto* a = attr(n, "axes")) {
            axes.assign(a->ints().begin(), a->ints().end());
          } else if (n.input_size() > 1) {
            const auto given = file_ints(index, n.input(1));
            if (!given || given->second.empty()) continue;
            axes = given->second;
          } else {
            continue;  // Squeeze of every size-1 axis: which ones is not known yet
          }
          const int64_t out_rank = squeeze ? rk - static_cast<int64_t>(axes.size()) : rk + static_cast<int64_t>(axes.size());
          const int64_t ref_rank = squeeze ? rk : out_rank;
          std::vector<bool> listed(static_cast<size_t>(std::max<int64_t>(ref_rank, 0)), false);
          bool ok = out_rank >= 0 && out_rank <= kMaxRank;
          for (int64_t a : axes) {
            if (!ok || a < -ref_rank || a >= ref_rank) {
              ok = false;
              continue;
            }
            auto flag = listed.begin() + (a < 0 ? a + ref_rank : a);
            ok = !*flag;  // an axis listed twice: the node is invalid (reported when it is imported)
            *flag = true;
          }
          if (!ok) continue;
          if (squeeze) {
            for (size_t i = 0; i < r.axes.size(); ++i) {
              if (!listed[i]) out.push_back(r.axes[i]);
            }
          } else {
            size_t k = 0;
            for (size_t i = 0; i < listed.size(); ++i) out.push_back(listed[i] ? -1 : r.axes.at(k++));
          }
        } else if (rule == BatchRule::kTranspose && pos == 0) {
          std::vector<int64_t> perm;
          if (const auto* p = attr(n, "perm")) perm.assign(p->ints().begin(), p->ints().end());
          if (perm.empty()) for (size_t i = r.axes.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
          if (perm.size() != r.axes.size()) continue;
          for (int64_t p : perm) {
            if (p < 0 || p >= rk) break;
            out.push_back(r.axes[static_cast<size_t>(p)]);
          }
          if (out.size() != r.axes.size()) continue;
          permuted = permuted || out != r.axes;
        } else {
          continue;  // Reshape, Flatten and the rest: the axes are not followed further
        }
        const int outputs = rule == BatchRule::kSplits ? n.output_size() : 1;
        for (int k = 0; k < outputs && k < n.output_size(); ++k) {
          if (!n.output(k).empty()) reach(n.output(k), out, permuted);
        }
      }
    }
  }
  return weak;
}

}  // namespace tessera::graph::onnx_import
