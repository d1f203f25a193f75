// The dataflow registry: one explicit line per built-in dataflow.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/array/dataflow.h"
#include "models/array/dataflows/builtin.h"

namespace tessera::array {

bool DataflowModel::fits(ArrayDims dims, GemmTile tile) const {
  if (dims.rows < 1 || dims.cols < 1) return false;
  if (tile.m < 1 || tile.k < 1 || tile.n < 1) return false;
  const GemmTile b = tile_bounds(dims);
  return tile.m <= b.m && tile.k <= b.k && tile.n <= b.n;
}

GemmTile DataflowModel::max_tile(ArrayDims dims, GemmTile limits) const {
  const GemmTile b = tile_bounds(dims);
  return GemmTile{std::min(limits.m, b.m), std::min(limits.k, b.k), std::min(limits.n, b.n)};
}

int64_t DataflowModel::weights_ready(ArrayDims dims, std::span<const int64_t> tile_ready, int64_t natural_stream,
                                     int64_t stream_cycles) const {
  const int64_t step = weight_stream_step(dims);
  int64_t ready = 0;
  for (std::size_t i = 0; i < tile_ready.size(); ++i) {
    const int64_t first_step = static_cast<int64_t>(i) * step;
    const int64_t offset =
        step > 0 && first_step < natural_stream ? stream_step_offset(first_step, natural_stream, stream_cycles) : 0;
    ready = std::max(ready, tile_ready[i] - offset);
  }
  return ready;
}

void DataflowRegistry::add(std::unique_ptr<const DataflowModel> model) {
  for (const auto& m : models_) {
    if (m->id() == model->id() || m->name() == model->name()) {
      throw std::logic_error("dataflow '" + std::string(model->name()) + "' registered twice");
    }
  }
  models_.push_back(std::move(model));
}

const DataflowModel* DataflowRegistry::find(std::string_view name) const {
  for (const auto& m : models_) {
    if (m->name() == name) return m.get();
  }
  return nullptr;
}

const DataflowModel& DataflowRegistry::get(Dataflow id) const {
  for (const auto& m : models_) {
    if (m->id() == id) return *m;
  }
  throw std::logic_error("dataflow " + std::to_string(static_cast<int>(id)) + " is not registered");
}

std::vector<std::string_view> DataflowRegistry::names() const {
  std::vector<std::string_view> out;
  for (const auto& m : models_) out.push_back(m->name());
  return out;
}

void add_builtin_dataflows(DataflowRegistry& registry) {
  registry.add(make_weight_stationary());
  registry.add(make_output_stationary());
  registry.add(make_input_stationary());
}

const DataflowRegistry& dataflows() {
  static const DataflowRegistry registry = [] {
    DataflowRegistry r;
    add_builtin_dataflows(r);
    return r;
  }();
  return registry;
}

const DataflowModel& dataflow_model(Dataflow dataflow) { return dataflows().get(dataflow); }

std::string_view dataflow_name(Dataflow d) { return dataflow_model(d).name(); }

std::optional<Dataflow> parse_dataflow(std::string_view s) {
  const DataflowModel* m = dataflows().find(s);
  return m ? std::optional<Dataflow>(m->id()) : std::nullopt;
}

}  // namespace tessera::array
