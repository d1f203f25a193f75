#include "sim/serve/queue_sim.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "sim/common/error.h"
#include "sim/serve/arrivals.h"

namespace tessera::serve {
namespace {

// A FIFO on one growing array (amortized: no allocation per element once warm).
template <typename T>
class Ring {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const T& front() const { return buf_[head_]; }
  void push(const T& v) {
    if (size_ == buf_.size()) grow();
    buf_[(head_ + size_) & (buf_.size() - 1)] = v;
    ++size_;
  }
  T pop() {
    T v = buf_[head_];
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
    return v;
  }

 private:
  void grow() {
    std::vector<T> b(buf_.empty() ? 16 : buf_.size() * 2);
    for (size_t k = 0; k < size_; ++k) b[k] = buf_[(head_ + k) & (buf_.size() - 1)];
    buf_.swap(b);
    head_ = 0;
  }
  std::vector<T> buf_;
  size_t head_ = 0, size_ = 0;
};

enum EventType : uint32_t { kArrival, kRequestCpuDone, kBatchCpuDone, kTimer, kDeviceDone };

struct Event {
  double t;
  uint64_t seq;  // ties in time: first scheduled, first handled (deterministic)
  uint32_t type;
  uint32_t id;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.t > b.t || (a.t == b.t && a.seq > b.seq); }
};

struct Batch {
  uint32_t lo, hi;      // its requests are order[lo..hi)
  uint32_t samples;
  double ready_t;       // when it reached its replica's queue
};

struct CoreJob {
  uint32_t id;
  bool is_batch;
  double enqueued_t;
};

class Simulation {
 public:
  explicit Simulation(const SimConfig& c) : c_(c) {}
  SimResult run();

 private:
  void schedule(double t, uint32_t type, uint32_t id) {
    heap_.push_back({t, seq_++, type, id});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
  void advance(double t);
  void arrive(uint32_t i, double t);
  void submit_core(CoreJob job, double t);
  void start_core(const CoreJob& job, double t);
  void core_done(double t);
  void enter_batcher(uint32_t i, double t);
  void check_batcher(double t);
  void close_batch(double t);
  double deadline_close_time(double t) const;
  void dispatch(uint32_t batch, double t);
  void start_replica(uint32_t r, double t);
  void device_done(uint32_t r, double t);

  const SimConfig& c_;
  uint64_t n_ = 0;
  int64_t max_batch_ = 1;
  std::vector<Event> heap_;
  uint64_t seq_ = 0;

  // Per request: arrival time, then (while it waits for its batch) the time it joined the
  // batching queue, then its latency.
  std::vector<double> arrival_t_;
  std::vector<double> lat_;
  std::vector<uint32_t> order_;  // requests in the order they joined the batching queue
  const std::vector<uint32_t>* sizes_ = nullptr;
  uint32_t size_of(uint32_t i) const { return sizes_ ? (*sizes_)[i] : 1u; }

  std::optional<ArrivalProcess> gaps_;
  Rng request_rng_, batch_rng_, device_rng_;
  uint64_t issued_ = 0;       // arrivals so far
  double last_arrival_t_ = 0;

  // Host cores.
  int64_t busy_cores_ = 0;
  Ring<CoreJob> core_queue_;
  double core_busy_s_ = 0;
  double host_wait_sum_ = 0;
  uint64_t host_jobs_ = 0;

  // Batching queue: order_[q_head_..q_tail_).
  uint32_t q_head_ = 0, q_tail_ = 0;
  uint64_t queued_samples_ = 0;
  uint64_t entered_ = 0;
  uint64_t timer_gen_ = 0;
  double timer_at_ = std::numeric_limits<double>::infinity();
  double fill_wait_sum_ = 0;
  std::vector<Batch> batches_;

  // Replicas.
  std::vector<Ring<uint32_t>> replica_queue_;
  std::vector<int64_t> outstanding_;      // queued + in service
  std::vector<int64_t> in_service_;       // batch id or -1
  std::vector<double> busy_s_;
  std::vector<double> free_estimate_t_;   // the deadline policy's view of when each is free
  uint32_t rr_next_ = 0;
  double root_free_t_ = 0;
  double root_busy_s_ = 0;
  double replica_wait_sum_ = 0;

  // Time integrals.
  double last_t_ = 0;
  uint64_t in_system_ = 0;
  uint64_t waiting_replica_ = 0;
  double area_system_ = 0, area_batcher_ = 0, area_host_queue_ = 0, area_replica_queue_ = 0;
  uint64_t max_in_system_ = 0;

  uint64_t completed_ = 0;
  double last_completion_t_ = 0;
};

void Simulation::advance(double t) {
  const double dt = t - last_t_;
  if (dt > 0) {
    area_system_ += static_cast<double>(in_system_) * dt;
    area_batcher_ += static_cast<double>(q_tail_ - q_head_) * dt;
    area_host_queue_ += static_cast<double>(core_queue_.size()) * dt;
    area_replica_queue_ += static_cast<double>(waiting_replica_) * dt;
    last_t_ = t;
  }
}

void Simulation::arrive(uint32_t i, double t) {
  advance(t);
  arrival_t_[i] = t;
  last_arrival_t_ = t;
  ++in_system_;
  max_in_system_ = std::max(max_in_system_, in_system_);
  ++issued_;
  if (c_.arrivals.kind != ArrivalKind::kClosedLoop && issued_ < n_) {
    schedule(t + gaps_->gap(issued_), kArrival, static_cast<uint32_t>(issued_));
  }
  if (c_.host.request_cpu.is_zero()) {
    enter_batcher(i, t);
  } else {
    submit_core({i, false, t}, t);
  }
}

void Simulation::submit_core(CoreJob job, double t) {
  if (c_.host.cores == 0 || busy_cores_ < c_.host.cores) {
    start_core(job, t);
  } else {
    core_queue_.push(job);
  }
}

void Simulation::start_core(const CoreJob& job, double t) {
  ++busy_cores_;
  host_wait_sum_ += t - job.enqueued_t;
  ++host_jobs_;
  const double d = job.is_batch ? c_.host.batch_cpu.sample(batch_rng_, batches_[job.id].samples)
                                : c_.host.request_cpu.sample(request_rng_, 1);
  core_busy_s_ += d;
  schedule(t + d, job.is_batch ? kBatchCpuDone : kRequestCpuDone, job.id);
}

void Simulation::core_done(double t) {
  --busy_cores_;
  if (!core_queue_.empty()) start_core(core_queue_.pop(), t);
}

void Simulation::enter_batcher(uint32_t i, double t) {
  order_[q_tail_++] = i;
  lat_[i] = t;  // the time it joined, until it completes
  queued_samples_ += size_of(i);
  ++entered_;
  check_batcher(t);
}

double Simulation::deadline_close_time(double t) const {
  // The latest time the batch can close and, by the expected times, still complete before
  // its oldest request's deadline: closed at time x it completes at
  // max(x + cpu, free) + service, where cpu is the host's mean batch time and free is when
  // the least-loaded replica is expected to be free. If even closing now misses the
  // deadline, it closes now.
  const int64_t b = static_cast<int64_t>(std::min<uint64_t>(queued_samples_, static_cast<uint64_t>(max_batch_)));
  const double cpu = c_.host.batch_cpu.mean_s(b);
  const double service = c_.service.service_at(b);
  double free_t = std::numeric_limits<double>::infinity();
  for (double f : free_estimate_t_) free_t = std::min(free_t, f);
  const double deadline = arrival_t_[order_[q_head_]] + c_.policy.deadline_s;
  if (std::max(t + cpu, free_t) + service > deadline) return t;
  return deadline - service - cpu;
}

void Simulation::check_batcher(double t) {
  const bool stream_done = entered_ == n_;
  while (q_head_ < q_tail_) {
    if (queued_samples_ >= static_cast<uint64_t>(max_batch_)) {
      close_batch(t);
      continue;
    }
    double close_t = std::numeric_limits<double>::infinity();
    switch (c_.policy.kind) {
      case Policy::kFixed: close_t = stream_done ? t : close_t; break;  // the last, partial batch
      case Policy::kTimeout: close_t = lat_[order_[q_head_]] + c_.policy.timeout_s; break;
      case Policy::kDeadline: close_t = deadline_close_time(t); break;
    }
    if (close_t <= t) {
      close_batch(t);
      continue;
    }
    if (close_t < std::numeric_limits<double>::infinity() && close_t != timer_at_) {
      timer_at_ = close_t;
      schedule(close_t, kTimer, static_cast<uint32_t>(++timer_gen_));
    }
    break;
  }
}

void Simulation::close_batch(double t) {
  advance(t);
  const uint32_t lo = q_head_;
  uint64_t samples = 0;
  while (q_head_ < q_tail_) {
    const uint32_t i = order_[q_head_];
    if (samples > 0 && samples + size_of(i) > static_cast<uint64_t>(max_batch_)) break;
    samples += size_of(i);
    fill_wait_sum_ += t - lat_[i];
    ++q_head_;
  }
  queued_samples_ -= samples;
  timer_at_ = std::numeric_limits<double>::infinity();  // a pending timer was for the old head
  ++timer_gen_;
  const uint32_t id = static_cast<uint32_t>(batches_.size());
  batches_.push_back({lo, q_head_, static_cast<uint32_t>(samples), t});
  if (c_.host.batch_cpu.is_zero()) {
    dispatch(id, t);
  } else {
    submit_core({id, true, t}, t);
  }
}

void Simulation::dispatch(uint32_t batch, double t) {
  const uint32_t n = static_cast<uint32_t>(replica_queue_.size());
  uint32_t r = rr_next_;
  if (c_.dispatch == Dispatch::kShortestQueue) {
    // Fewest outstanding batches; ties go to the first from the round-robin pointer.
    for (uint32_t k = 1; k < n; ++k) {
      const uint32_t cand = (rr_next_ + k) % n;
      if (outstanding_[cand] < outstanding_[r]) r = cand;
    }
  }
  rr_next_ = (r + 1) % n;
  Batch& b = batches_[batch];
  b.ready_t = t;
  free_estimate_t_[r] = std::max(free_estimate_t_[r], t) + c_.service.service_at(b.samples);
  ++outstanding_[r];
  advance(t);
  replica_queue_[r].push(batch);
  ++waiting_replica_;
  if (in_service_[r] < 0) start_replica(r, t);
}

void Simulation::start_replica(uint32_t r, double t) {
  advance(t);
  const uint32_t batch = replica_queue_[r].pop();
  --waiting_replica_;
  const Batch& b = batches_[batch];
  double start = t;
  if (c_.host.pcie_root_bytes_per_s > 0) {
    // The batch's host transfers pass the shared root complex first-come-first-served; the
    // link time itself is inside the service time (the SystemC run simulated the link).
    const double hold = c_.service.bytes_at(b.samples) / c_.host.pcie_root_bytes_per_s;
    start = std::max(t, root_free_t_);
    root_free_t_ = start + hold;
    root_busy_s_ += hold;
  }
  double d = c_.service.service_at(b.samples);
  if (c_.service_dist == ServiceDist::kExponential) d = device_rng_.exponential(d);
  busy_s_[r] += d;
  replica_wait_sum_ += start - b.ready_t;
  in_service_[r] = batch;
  schedule(start + d, kDeviceDone, r);
}

void Simulation::device_done(uint32_t r, double t) {
  advance(t);
  const Batch& b = batches_[static_cast<size_t>(in_service_[r])];
  for (uint32_t k = b.lo; k < b.hi; ++k) {
    const uint32_t i = order_[k];
    lat_[i] = t - arrival_t_[i];
  }
  const uint32_t done = b.hi - b.lo;
  in_system_ -= done;
  completed_ += done;
  last_completion_t_ = t;
  in_service_[r] = -1;
  --outstanding_[r];
  if (!replica_queue_[r].empty()) start_replica(r, t);
  if (c_.arrivals.kind == ArrivalKind::kClosedLoop && issued_ < n_) {
    schedule(t, kArrival, static_cast<uint32_t>(issued_));
  }
}

SimResult Simulation::run() {
  const ArrivalSpec& a = c_.arrivals;
  if (c_.replicas < 1) throw InputError("serve: replicas must be >= 1, got " + std::to_string(c_.replicas));
  if (c_.policy.max_batch < 1) throw InputError("serve: the batch must be >= 1");
  if (c_.policy.max_batch > c_.service.max_batch()) {
    throw InputError("serve: batch " + std::to_string(c_.policy.max_batch) + " is above the largest simulated batch (" +
                     std::to_string(c_.service.max_batch()) + ") of " + c_.service.platform);
  }
  if (c_.policy.kind == Policy::kTimeout && !(c_.policy.timeout_s >= 0)) throw InputError("serve: the timeout must be >= 0");
  if (c_.policy.kind == Policy::kDeadline && !(c_.policy.deadline_s > 0)) throw InputError("serve: the deadline must be > 0");
  const bool needs_rate = a.kind == ArrivalKind::kPoisson || a.kind == ArrivalKind::kConstant ||
                          a.kind == ArrivalKind::kGamma || a.kind == ArrivalKind::kHyperExponential;
  if (needs_rate && !(a.rate_per_s > 0 && std::isfinite(a.rate_per_s))) {
    throw InputError("serve: the arrival rate must be a positive number, got " + std::to_string(a.rate_per_s));
  }
  if ((a.kind == ArrivalKind::kGamma && !(a.cv > 0)) || (a.kind == ArrivalKind::kHyperExponential && !(a.cv >= 1))) {
    throw InputError(std::string("serve: ") + arrival_name(a.kind) + " arrivals need a coefficient of variation " +
                     (a.kind == ArrivalKind::kGamma ? "> 0" : ">= 1") + ", got " + std::to_string(a.cv));
  }
  if (a.kind == ArrivalKind::kClosedLoop && c_.policy.max_batch != 1) {
    throw InputError("serve: a closed loop (one request in flight) needs batch 1, got " +
                     std::to_string(c_.policy.max_batch));
  }
  n_ = c_.requests;
  if (a.kind == ArrivalKind::kTrace) {
    if (!a.trace || a.trace->arrival_s.empty()) throw InputError("serve: the trace has no requests");
    n_ = std::min<uint64_t>(n_, a.trace->arrival_s.size());
    sizes_ = &a.trace->size;
    for (uint64_t i = 0; i < n_; ++i) {
      if (a.trace->size[i] > static_cast<uint64_t>(c_.policy.max_batch)) {
        throw InputError(a.trace->source + ": request " + std::to_string(i + 1) + " has " +
                         std::to_string(a.trace->size[i]) + " samples, more than the batch (" +
                         std::to_string(c_.policy.max_batch) + ")");
      }
    }
  }
  if (n_ < 1) throw InputError("serve: at least one request is needed");
  if (n_ > (1ull << 31)) throw InputError("serve: at most 2^31 requests per run, got " + std::to_string(n_));
  max_batch_ = c_.policy.max_batch;

  arrival_t_.assign(n_, 0);
  lat_.assign(n_, 0);
  order_.assign(n_, 0);
  batches_.reserve(n_ / static_cast<uint64_t>(max_batch_) + 16);
  heap_.reserve(static_cast<size_t>(std::min<int64_t>(c_.host.cores, 1 << 16) + c_.replicas + 64));
  gaps_.emplace(a, c_.seed);
  request_rng_ = stream(c_.seed, Stream::kRequestCpu);
  batch_rng_ = stream(c_.seed, Stream::kBatchCpu);
  device_rng_ = stream(c_.seed, Stream::kDevice);
  const size_t reps = static_cast<size_t>(c_.replicas);
  replica_queue_.resize(reps);
  outstanding_.assign(reps, 0);
  in_service_.assign(reps, -1);
  busy_s_.assign(reps, 0);
  free_estimate_t_.assign(reps, 0);

  last_t_ = 0;
  schedule(0, kArrival, 0);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event e = heap_.back();
    heap_.pop_back();
    switch (e.type) {
      case kArrival: arrive(e.id, e.t); break;
      case kRequestCpuDone:
        advance(e.t);
        core_done(e.t);
        enter_batcher(e.id, e.t);
        break;
      case kBatchCpuDone:
        advance(e.t);
        core_done(e.t);
        dispatch(e.id, e.t);
        break;
      case kTimer:
        if (e.id == static_cast<uint32_t>(timer_gen_)) {
          timer_at_ = std::numeric_limits<double>::infinity();
          check_batcher(e.t);
        }
        break;
      case kDeviceDone: device_done(e.id, e.t); break;
    }
  }
  if (completed_ != n_) throw std::logic_error("serve: " + std::to_string(n_ - completed_) + " requests never completed");

  SimResult r;
  r.requests = n_;
  for (uint64_t i = 0; i < n_; ++i) r.samples += size_of(static_cast<uint32_t>(i));
  r.batches = batches_.size();
  r.first_arrival_s = arrival_t_[0];
  r.last_completion_s = last_completion_t_;
  r.span_s = last_completion_t_ - arrival_t_[0];
  const double arrival_span = last_arrival_t_ - arrival_t_[0];
  r.offered_rate_per_s = arrival_span > 0 ? static_cast<double>(n_ - 1) / arrival_span : 0;
  const double span = r.span_s > 0 ? r.span_s : 1;
  r.throughput_per_s = static_cast<double>(n_) / span;
  r.samples_per_s = static_cast<double>(r.samples) / span;
  r.mean_batch = static_cast<double>(r.samples) / static_cast<double>(r.batches);
  double sum = 0, mx = 0;
  for (double l : lat_) {
    sum += l;
    mx = std::max(mx, l);
  }
  r.latency_mean_s = sum / static_cast<double>(n_);
  r.latency_max_s = mx;
  r.fill_wait_mean_s = fill_wait_sum_ / static_cast<double>(n_);
  r.host_wait_mean_s = host_jobs_ ? host_wait_sum_ / static_cast<double>(host_jobs_) : 0;
  r.replica_wait_mean_s = replica_wait_sum_ / static_cast<double>(r.batches);
  double busy = 0;
  for (double b : busy_s_) {
    r.replica_utilizations.push_back(b / span);
    busy += b;
  }
  r.replica_utilization = busy / (span * static_cast<double>(reps));
  r.host_utilization = c_.host.cores > 0 ? core_busy_s_ / (span * static_cast<double>(c_.host.cores)) : 0;
  r.pcie_root_utilization = root_busy_s_ / span;
  r.mean_in_system = area_system_ / span;
  r.max_in_system = static_cast<double>(max_in_system_);
  r.mean_batching_queue = area_batcher_ / span;
  r.mean_host_queue = area_host_queue_ / span;
  r.mean_replica_queue = area_replica_queue_ / span;
  r.littles_lambda_w = r.throughput_per_s * r.latency_mean_s;
  r.littles_relative_error =
      r.littles_lambda_w > 0 ? std::abs(r.mean_in_system - r.littles_lambda_w) / r.littles_lambda_w : 0;
  r.capacity_per_s = capacity(c_);
  if (c_.latency_bound_s > 0) {
    for (double l : lat_) r.over_bound += l > c_.latency_bound_s;
  }
  if (c_.keep_latencies) r.latencies_s = lat_;
  // Percentiles in increasing order, each selection on the part above the previous one.
  std::vector<double>& v = lat_;
  const double qs[] = {0.5, 0.9, 0.95, 0.99, 0.999};
  double* outs[] = {&r.latency_s.p50, &r.latency_s.p90, &r.latency_s.p95, &r.latency_s.p99, &r.latency_s.p999};
  size_t from = 0;
  for (int k = 0; k < 5; ++k) {
    const size_t idx = std::min(v.size() - 1, static_cast<size_t>(static_cast<double>(v.size()) * qs[k]));
    std::nth_element(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(idx), v.end());
    *outs[k] = v[idx];
    from = idx;
  }
  r.latency_at_target_s = quantile(v, c_.target_quantile);
  return r;
}

}  // namespace

SimResult simulate(const SimConfig& c) { return Simulation(c).run(); }

double quantile(std::vector<double>& latencies, double q) {
  if (latencies.empty()) return 0;
  const size_t idx = std::min(latencies.size() - 1, static_cast<size_t>(static_cast<double>(latencies.size()) * q));
  std::nth_element(latencies.begin(), latencies.begin() + static_cast<std::ptrdiff_t>(idx), latencies.end());
  return latencies[idx];
}

}  // namespace tessera::serve
