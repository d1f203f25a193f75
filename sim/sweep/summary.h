#pragma once
// `tessera sweep EXPERIMENT --summarize`: counts and the Pareto front of finished points,
// per workload and batch, over the experiment's `pareto:` axes (or --pareto).
#include <string>
#include <vector>

#include "sim/sweep/experiment.h"
#include "sim/sweep/results.h"

namespace tessera::sweep {

// Indices of the non-dominated rows of `values` (each row one point, each column an axis).
// A point dominates another when it is no worse on every axis and better on at least one;
// `minimize[k]` says which way axis k is better. Equal points are all kept. Input order kept.
std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& values, const std::vector<bool>& minimize);

// "a:min,b:max" (":min" is the default) -> axes; throws InputError on a bad spec.
std::vector<ParetoAxis> parse_pareto_axes(const std::string& spec, const Experiment& e);

// Markdown: counts, one Pareto table per (workload, batch), and the failures grouped by error.
std::string summarize(const Experiment& e, const std::vector<Row>& rows, const std::vector<ParetoAxis>& axes);

}  // namespace tessera::sweep
