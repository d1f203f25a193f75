#include "sim/serve/model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tessera::serve {

double Tail::sample(Rng& rng) const {
  switch (kind) {
    case Kind::kNone: return 0;
    case Kind::kExponential: return rng.exponential(scale_s);
    case Kind::kLognormal: return scale_s * std::exp(shape * rng.normal());
    case Kind::kPareto: return scale_s / std::pow(rng.uniform_open0(), 1 / shape);
  }
  return 0;
}

double Tail::mean_s() const {
  switch (kind) {
    case Kind::kNone: return 0;
    case Kind::kExponential: return scale_s;
    case Kind::kLognormal: return scale_s * std::exp(0.5 * shape * shape);
    case Kind::kPareto: return shape > 1 ? shape * scale_s / (shape - 1) : std::numeric_limits<double>::infinity();
  }
  return 0;
}

Tail Tail::scaled(double k) const {
  Tail t = *this;
  t.scale_s *= k;
  return t;
}

const char* tail_kind_name(Tail::Kind kind) {
  switch (kind) {
    case Tail::Kind::kNone: return "none";
    case Tail::Kind::kExponential: return "exponential";
    case Tail::Kind::kLognormal: return "lognormal";
    case Tail::Kind::kPareto: return "pareto";
  }
  return "?";
}

HostModel HostModel::scaled(double k) const {
  HostModel h = *this;
  h.request_cpu = request_cpu.scaled(k);
  h.batch_cpu = batch_cpu.scaled(k);
  h.scale = scale * k;
  return h;
}

namespace {

// Piecewise-linear in the batch between simulated sizes; exact at them.
double interpolate(const std::vector<int64_t>& xs, const std::vector<double>& ys, int64_t b) {
  if (xs.empty()) throw std::logic_error("serve: empty service table");
  if (b < 1 || b > xs.back()) throw std::logic_error("serve: batch " + std::to_string(b) + " outside the service table");
  const auto it = std::lower_bound(xs.begin(), xs.end(), b);
  const size_t k = static_cast<size_t>(it - xs.begin());
  if (*it == b) return ys[k];
  if (k == 0) {
    // Below the smallest simulated batch: proportional to the batch, no lower than a
    // share of it (the table normally starts at 1, so this is the unusual case).
    return ys[0] * static_cast<double>(b) / static_cast<double>(xs[0]);
  }
  const double x0 = static_cast<double>(xs[k - 1]), x1 = static_cast<double>(xs[k]);
  return ys[k - 1] + (ys[k] - ys[k - 1]) * (static_cast<double>(b) - x0) / (x1 - x0);
}

}  // namespace

double ServiceTable::service_at(int64_t b) const { return interpolate(batches, service_s, b); }
double ServiceTable::bytes_at(int64_t b) const { return interpolate(batches, pcie_bytes, b); }

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::kFixed: return "fixed";
    case Policy::kTimeout: return "timeout";
    case Policy::kDeadline: return "deadline";
  }
  return "?";
}

const char* dispatch_name(Dispatch d) { return d == Dispatch::kRoundRobin ? "round-robin" : "shortest-queue"; }

const char* arrival_name(ArrivalKind k) {
  switch (k) {
    case ArrivalKind::kPoisson: return "poisson";
    case ArrivalKind::kConstant: return "constant";
    case ArrivalKind::kGamma: return "gamma";
    case ArrivalKind::kHyperExponential: return "hyperexp";
    case ArrivalKind::kTrace: return "trace";
    case ArrivalKind::kClosedLoop: return "closed-loop";
    case ArrivalKind::kAllAtOnce: return "all-at-once";
  }
  return "?";
}

double Trace::natural_rate_per_s() const {
  if (arrival_s.size() < 2) return 0;
  const double span = arrival_s.back() - arrival_s.front();
  return span > 0 ? static_cast<double>(arrival_s.size() - 1) / span : 0;
}

double capacity(const SimConfig& c) {
  const int64_t b = std::min(c.policy.max_batch, c.service.max_batch());
  double mean_size = 1;
  if (c.arrivals.kind == ArrivalKind::kTrace && c.arrivals.trace && !c.arrivals.trace->size.empty()) {
    double sum = 0;
    for (uint32_t s : c.arrivals.trace->size) sum += s;
    mean_size = sum / static_cast<double>(c.arrivals.trace->size.size());
  }
  const double batches_per_request = mean_size / static_cast<double>(b);
  double cap = static_cast<double>(c.replicas) / (c.service.service_at(b) * batches_per_request);
  if (c.host.cores > 0) {
    const double core_s = c.host.request_cpu.mean_s(1) + c.host.batch_cpu.mean_s(b) * batches_per_request;
    if (core_s > 0) cap = std::min(cap, static_cast<double>(c.host.cores) / core_s);
  }
  if (c.host.pcie_root_bytes_per_s > 0) {
    const double bytes = c.service.bytes_at(b) * batches_per_request;
    if (bytes > 0) cap = std::min(cap, c.host.pcie_root_bytes_per_s / bytes);
  }
  return cap;
}

}  // namespace tessera::serve
