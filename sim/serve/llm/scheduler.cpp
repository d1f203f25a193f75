#include "sim/serve/llm/scheduler.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

#include "sim/common/error.h"
#include "sim/serve/queue_sim.h"

namespace tessera::serve::llm {

const char* preemption_name(Preemption p) { return p == Preemption::kSwap ? "swap" : "recompute"; }

void check_requests_fit(const std::vector<LlmRequest>& requests, const ServingTarget& target, const LlmSimConfig& config,
                        const std::string& origin) {
  const auto& s = config.scheduler;
  const int64_t blocks = target.kv_capacity_tokens() / s.block_tokens;
  const int64_t cache_tokens = blocks * s.block_tokens;
  if (blocks < 1) {
    throw InputError(target.name() + ": the KV cache holds " + std::to_string(target.kv_capacity_tokens()) +
                     " tokens, less than one page of --block-tokens " + std::to_string(s.block_tokens));
  }
  for (size_t k = 0; k < requests.size(); ++k) {
    const LlmRequest& r = requests[k];
    const int64_t seq = r.prompt_tokens + r.output_tokens;
    const std::string who = origin + ": request " + std::to_string(k + 1) + " (prompt " + std::to_string(r.prompt_tokens) +
                            " + output " + std::to_string(r.output_tokens) + " tokens)";
    if (r.output_tokens < 1) throw InputError(who + ": the output length must be at least 1 token");
    if (seq > target.max_context_tokens()) {
      throw InputError(who + " is longer than the model's context window of " + std::to_string(target.max_context_tokens()) +
                       " tokens; shorten the lengths (a lognormal takes a cap: lognormal:MEAN:SD:MAX)");
    }
    if (seq > cache_tokens) {
      throw InputError(who + " does not fit the KV cache of " + target.name() + " (" + std::to_string(cache_tokens) +
                       " tokens in " + std::to_string(blocks) + " pages); use more chips or shorter requests");
    }
    if (!s.chunked_prefill) {
      // Recompute prefills the prompt and every generated token but the last again.
      const int64_t longest = s.preemption == Preemption::kRecompute ? seq - 1 : r.prompt_tokens;
      if (longest > s.max_batch_tokens) {
        throw InputError(who + ": without --chunked-prefill a prefill of " + std::to_string(longest) +
                         " tokens must fit one iteration, but --max-batch-tokens is " + std::to_string(s.max_batch_tokens) +
                         "; raise it or turn chunked prefill on");
      }
    }
  }
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Seq {
  int64_t prompt = 0, output = 0;
  int64_t generated = 0;       // tokens out so far
  int64_t kv = 0;              // tokens whose K and V are in the cache
  int64_t prefill_target = 0;  // tokens to be in the cache before the next token (while prefilling)
  int64_t blocks = 0;
  bool prefilling = false;
  bool swapped = false;        // its KV cache is on the host
  bool done = false;
  double arrival_s = 0;
  double last_token_s = 0;
};

class Simulation;

class Replica {
 public:
  Replica(Simulation& sim, int64_t index);
  void enqueue(int64_t id) { waiting_.push_back(id); ++outstanding_; }
  void run_until(double t);  // every iteration that starts before t
  // Requests sent here and not finished at time t (t >= the start of the last iteration:
  // only the last iteration may end after t).
  int64_t outstanding_at(double t) const { return outstanding_ + (clock_ > t ? finished_last_ : 0); }

 private:
  int64_t blocks_for(int64_t tokens) const { return (tokens + bt_ - 1) / bt_; }
  void preempt(int64_t id, double& swap_s);
  void iterate(double start);
  // The steps of one iteration: the batch (decodes, prefill chunks, admissions) within the
  // token budget, then its tokens and the sequences it finished, then the statistics.
  void add_decodes(int64_t& budget, int64_t& in_batch, double& swap_s);
  void add_prefill_chunks(int64_t& budget, int64_t& in_batch);
  void admit(int64_t& budget, int64_t& in_batch, double& swap_s);
  int64_t advance(double end);  // returns the prefill tokens run
  void retire_finished();
  void record(double start, double seconds, double swap_s, const IterationCost& cost, int64_t prefill_tokens,
              int64_t running_in_batch);

  Simulation& sim_;
  int64_t index_;
  int64_t bt_;
  int64_t total_blocks_;
  int64_t free_blocks_;
  std::deque<int64_t> waiting_;
  std::vector<int64_t> running_;  // admission order
  int64_t outstanding_ = 0;
  int64_t finished_last_ = 0;     // requests the last iteration finished
  double clock_ = 0;              // end of the last iteration
  uint64_t preempted_now_ = 0;
  // Scratch of one iteration, kept to reuse the memory.
  std::vector<int64_t> decodes_;
  std::vector<std::pair<int64_t, int64_t>> chunks_;  // (sequence, tokens)
  IterationMix mix_;
};

class Simulation {
 public:
  Simulation(const std::vector<LlmRequest>& requests, const ServingTarget& target, const LlmSimConfig& config)
      : reqs_(requests), target_(target), c_(config) {
    seqs_.resize(requests.size());
    out_.per_request.resize(requests.size());
    for (size_t k = 0; k < requests.size(); ++k) {
      seqs_[k].prompt = requests[k].prompt_tokens;
      seqs_[k].output = requests[k].output_tokens;
      seqs_[k].arrival_s = requests[k].arrival_s;
      auto& rec = out_.per_request[k];
      rec.arrival_s = requests[k].arrival_s;
      rec.prompt_tokens = requests[k].prompt_tokens;
      rec.output_tokens = requests[k].output_tokens;
    }
  }

  LlmResult run();

  const std::vector<LlmRequest>& reqs_;
  const ServingTarget& target_;
  const LlmSimConfig& c_;
  std::vector<Seq> seqs_;
  LlmResult out_;
  std::vector<double> gaps_;
  std::vector<std::vector<IterationRecord>> timelines_;
  double busy_s_ = 0, model_s_ = 0, iteration_energy_j_ = 0, running_time_ = 0, kv_time_ = 0;

  void emit(int64_t id, double t) {
    Seq& s = seqs_[static_cast<size_t>(id)];
    RequestRecord& rec = out_.per_request[static_cast<size_t>(id)];
    if (s.generated == 0) {
      rec.first_token_s = t;
    } else {
      const double gap = t - s.last_token_s;
      if (c_.inter_token) gaps_.push_back(gap);
      rec.max_gap_s = std::max(rec.max_gap_s, gap);
    }
    if (c_.keep_token_times) rec.token_s.push_back(t);
    s.last_token_s = t;
    ++s.generated;
    if (s.generated == s.output) {
      s.done = true;
      rec.finish_s = t;
    }
  }
};

Replica::Replica(Simulation& sim, int64_t index)
    : sim_(sim), index_(index), bt_(sim.c_.scheduler.block_tokens) {
  total_blocks_ = sim.target_.kv_capacity_tokens() / bt_;
  free_blocks_ = total_blocks_;
}

void Replica::preempt(int64_t id, double& swap_s) {
  Seq& s = sim_.seqs_[static_cast<size_t>(id)];
  free_blocks_ += s.blocks;
  s.blocks = 0;
  if (sim_.c_.scheduler.preemption == Preemption::kSwap && !s.prefilling) {
    swap_s += sim_.target_.swap_s(s.kv);
    s.swapped = true;
  } else {
    s.kv = 0;
    s.prefilling = false;
  }
  ++sim_.out_.per_request[static_cast<size_t>(id)].preemptions;
  ++preempted_now_;
  waiting_.push_front(id);
}

void Replica::iterate(double start) {
  int64_t budget = sim_.c_.scheduler.max_batch_tokens;
  int64_t in_batch = 0;
  double swap_s = 0;
  preempted_now_ = 0;
  decodes_.clear();
  chunks_.clear();
  mix_.prefill.clear();
  mix_.decode_sequences = 0;
  mix_.decode_kv_tokens = 0;
  mix_.decode_kv_lengths.clear();
  add_decodes(budget, in_batch, swap_s);
  add_prefill_chunks(budget, in_batch);
  admit(budget, in_batch, swap_s);
  mix_.decode_sequences = static_cast<int64_t>(decodes_.size());
  if (decodes_.empty() && chunks_.empty()) {
    throw std::logic_error("serve-llm: an iteration with nothing to run (a request that cannot fit passed the checks)");
  }

  const IterationCost cost = sim_.target_.iteration(mix_);
  const double seconds = cost.seconds + swap_s;
  const double end = start + seconds;
  const int64_t prefill_tokens = advance(end);
  const int64_t running_in_batch = static_cast<int64_t>(running_.size());
  retire_finished();
  record(start, seconds, swap_s, cost, prefill_tokens, running_in_batch);
  clock_ = end;
}

// 1. A decode token for every running sequence whose prompt is in the cache; a sequence
// that needs a page the cache lacks preempts the latest admitted until it fits.
void Replica::add_decodes(int64_t& budget, int64_t& in_batch, double& swap_s) {
  const SchedulerConfig& cfg = sim_.c_.scheduler;
  auto& seqs = sim_.seqs_;
  for (size_t i = 0; i < running_.size(); ++i) {
    const int64_t id = running_[i];
    Seq& s = seqs[static_cast<size_t>(id)];
    if (s.prefilling) continue;
    if (budget == 0 || in_batch == cfg.max_batch) break;
    const int64_t need = blocks_for(s.kv + 1) - s.blocks;
    bool self_preempted = false;
    while (need > free_blocks_) {
      const int64_t victim = running_.back();
      running_.pop_back();
      preempt(victim, swap_s);
      if (victim == id) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;  // it was the last running sequence
    free_blocks_ -= need;
    s.blocks += need;
    decodes_.push_back(id);
    mix_.decode_kv_tokens += s.kv + 1;  // the new token attends over itself and the cache
    mix_.decode_kv_lengths.push_back(s.kv + 1);
    --budget;
    ++in_batch;
  }
}

// 2. The next chunk of every prompt being prefilled (its pages were taken at admission).
void Replica::add_prefill_chunks(int64_t& budget, int64_t& in_batch) {
  const SchedulerConfig& cfg = sim_.c_.scheduler;
  for (const int64_t id : running_) {
    Seq& s = sim_.seqs_[static_cast<size_t>(id)];
    if (!s.prefilling) continue;
    if (budget == 0 || in_batch == cfg.max_batch) break;
    const int64_t chunk = std::min(s.prefill_target - s.kv, budget);
    mix_.prefill.push_back({chunk, s.kv});
    chunks_.push_back({id, chunk});
    budget -= chunk;
    ++in_batch;
  }
}

// 3. Admission, first come first served; the head of the queue blocks the rest. None in an
// iteration that preempted: the cache is full (vLLM swaps nothing in then), and the sequence
// just preempted would come straight back.
void Replica::admit(int64_t& budget, int64_t& in_batch, double& swap_s) {
  const SchedulerConfig& cfg = sim_.c_.scheduler;
  auto& seqs = sim_.seqs_;
  while (preempted_now_ == 0 && !waiting_.empty() && static_cast<int64_t>(running_.size()) < cfg.max_running && in_batch < cfg.max_batch &&
         budget > 0) {
    const int64_t id = waiting_.front();
    Seq& s = seqs[static_cast<size_t>(id)];
    if (s.swapped) {
      const int64_t need = blocks_for(s.kv + 1);
      if (need > free_blocks_) break;
      free_blocks_ -= need;
      s.blocks = need;
      swap_s += sim_.target_.swap_s(s.kv);
      s.swapped = false;
      decodes_.push_back(id);
      mix_.decode_kv_tokens += s.kv + 1;
      mix_.decode_kv_lengths.push_back(s.kv + 1);
      --budget;
    } else {
      const int64_t target = s.prompt + s.generated;  // a recomputed sequence prefills its output too
      const int64_t need = blocks_for(target);
      if (need > free_blocks_) break;
      if (!cfg.chunked_prefill && target > budget) break;
      free_blocks_ -= need;
      s.blocks = need;
      s.kv = 0;
      s.prefill_target = target;
      s.prefilling = true;
      const int64_t chunk = std::min(target, budget);
      mix_.prefill.push_back({chunk, 0});
      chunks_.push_back({id, chunk});
      budget -= chunk;
    }
    ++in_batch;
    waiting_.pop_front();
    running_.push_back(id);
  }
}

// The batch's tokens at the iteration's end: a decode emits one; a prefill that completes
// its prompt emits the first output token.
int64_t Replica::advance(double end) {
  auto& seqs = sim_.seqs_;
  for (const int64_t id : decodes_) {
    Seq& s = seqs[static_cast<size_t>(id)];
    ++s.kv;
    sim_.emit(id, end);
  }
  int64_t prefill_tokens = 0;
  for (const auto& [id, tokens] : chunks_) {
    Seq& s = seqs[static_cast<size_t>(id)];
    s.kv += tokens;
    prefill_tokens += tokens;
    if (s.kv == s.prefill_target) {
      s.prefilling = false;
      sim_.emit(id, end);
    }
  }
  return prefill_tokens;
}

// Finished sequences leave and free their pages.
void Replica::retire_finished() {
  finished_last_ = 0;
  size_t kept = 0;
  for (const int64_t id : running_) {
    Seq& s = sim_.seqs_[static_cast<size_t>(id)];
    if (s.done) {
      free_blocks_ += s.blocks;
      s.blocks = 0;
      --outstanding_;
      ++finished_last_;
    } else {
      running_[kept++] = id;
    }
  }
  running_.resize(kept);
}

// Busy time, energy, KV occupancy and preemptions; the timeline row if one is kept.
void Replica::record(double start, double seconds, double swap_s, const IterationCost& cost, int64_t prefill_tokens,
                     int64_t running_in_batch) {
  const int64_t used_tokens = (total_blocks_ - free_blocks_) * bt_;
  sim_.busy_s_ += seconds;
  sim_.model_s_ += cost.seconds;
  sim_.iteration_energy_j_ += cost.energy_j;
  sim_.running_time_ += static_cast<double>(running_in_batch) * seconds;
  sim_.kv_time_ += static_cast<double>(used_tokens) * seconds;
  const double occupancy = static_cast<double>(used_tokens) / static_cast<double>(total_blocks_ * bt_);
  sim_.out_.kv_occupancy_max = std::max(sim_.out_.kv_occupancy_max, occupancy);
  sim_.out_.preemptions += preempted_now_;
  ++sim_.out_.iterations;
  if (!sim_.c_.keep_timeline) return;
  IterationRecord r;
  r.replica = index_;
  r.start_s = start;
  r.seconds = seconds;
  r.prefill_tokens = prefill_tokens;
  r.prefill_sequences = static_cast<int64_t>(chunks_.size());
  r.decode_sequences = static_cast<int64_t>(decodes_.size());
  r.running = running_in_batch;
  r.waiting = static_cast<int64_t>(waiting_.size());
  r.kv_used_tokens = used_tokens;
  r.preempted = static_cast<int64_t>(preempted_now_);
  r.swap_s = swap_s;
  r.energy_j = cost.energy_j;
  sim_.timelines_[static_cast<size_t>(index_)].push_back(r);
}

void Replica::run_until(double t) {
  while (!running_.empty() || !waiting_.empty()) {
    double start = clock_;
    if (running_.empty()) start = std::max(clock_, sim_.seqs_[static_cast<size_t>(waiting_.front())].arrival_s);
    if (!(start < t)) return;
    iterate(start);
  }
}

Distribution distribution(std::vector<double>& v) {
  Distribution d;
  if (v.empty()) return d;
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  d.max = *std::max_element(v.begin(), v.end());
  d.p50 = quantile(v, 0.50);
  d.p90 = quantile(v, 0.90);
  d.p99 = quantile(v, 0.99);
  return d;
}

LlmResult Simulation::run() {
  const int64_t n_replicas = c_.replicas;
  timelines_.assign(static_cast<size_t>(n_replicas), {});
  std::vector<Replica> replicas;
  replicas.reserve(static_cast<size_t>(n_replicas));
  for (int64_t r = 0; r < n_replicas; ++r) replicas.emplace_back(*this, r);
  for (size_t k = 0; k < reqs_.size(); ++k) {
    const double t = reqs_[k].arrival_s;
    for (auto& r : replicas) r.run_until(t);
    int64_t pick = static_cast<int64_t>(k % static_cast<size_t>(n_replicas));
    if (c_.dispatch == Dispatch::kShortestQueue) {
      pick = 0;
      for (int64_t r = 1; r < n_replicas; ++r) {
        if (replicas[static_cast<size_t>(r)].outstanding_at(t) < replicas[static_cast<size_t>(pick)].outstanding_at(t)) pick = r;
      }
    }
    out_.per_request[k].replica = pick;
    replicas[static_cast<size_t>(pick)].enqueue(static_cast<int64_t>(k));
  }
  for (auto& r : replicas) r.run_until(kInf);

  // ---- Figures.
  LlmResult& r = out_;
  r.requests = reqs_.size();
  r.kv_capacity_tokens = (target_.kv_capacity_tokens() / c_.scheduler.block_tokens) * c_.scheduler.block_tokens;
  if (reqs_.empty()) return std::move(out_);
  double first_arrival = reqs_.front().arrival_s, last_arrival = reqs_.back().arrival_s, last_finish = 0;
  std::vector<double> ttft, tpot, e2e;
  ttft.reserve(reqs_.size());
  e2e.reserve(reqs_.size());
  for (const RequestRecord& q : r.per_request) {
    last_finish = std::max(last_finish, q.finish_s);
    r.prompt_tokens += static_cast<uint64_t>(q.prompt_tokens);
    r.output_tokens += static_cast<uint64_t>(q.output_tokens);
    ttft.push_back(q.ttft_s());
    e2e.push_back(q.e2e_s());
    if (q.output_tokens > 1) tpot.push_back(q.tpot_s());
    const bool ttft_ok = c_.slo_ttft_s <= 0 || q.ttft_s() <= c_.slo_ttft_s;
    const bool tpot_ok = c_.slo_tpot_s <= 0 || q.tpot_s() <= c_.slo_tpot_s;
    if (ttft_ok && tpot_ok) ++r.slo_met;
  }
  r.span_s = last_finish - first_arrival;
  r.offered_rate_per_s = last_arrival > first_arrival ? static_cast<double>(reqs_.size() - 1) / (last_arrival - first_arrival) : 0;
  r.requests_per_s = static_cast<double>(r.requests) / r.span_s;
  r.output_tokens_per_s = static_cast<double>(r.output_tokens) / r.span_s;
  r.total_tokens_per_s = static_cast<double>(r.output_tokens + r.prompt_tokens) / r.span_s;
  r.goodput_per_s = static_cast<double>(r.slo_met) / r.span_s;
  r.ttft_s = distribution(ttft);
  r.tpot_s = distribution(tpot);
  r.e2e_s = distribution(e2e);
  r.itl_s = distribution(gaps_);
  r.ttft_at_quantile_s = quantile(ttft, c_.quantile);
  r.tpot_at_quantile_s = tpot.empty() ? 0 : quantile(tpot, c_.quantile);
  r.busy_s = busy_s_;
  r.mean_running = busy_s_ > 0 ? running_time_ / busy_s_ : 0;
  const double replica_span = r.span_s * static_cast<double>(n_replicas);
  r.kv_occupancy_mean = kv_time_ / (static_cast<double>(r.kv_capacity_tokens) * replica_span);
  // Chips draw idle power whenever they run no model step (idle gaps and swaps).
  r.energy_j = iteration_energy_j_ + target_.idle_power_w() * std::max(0.0, replica_span - model_s_);
  r.chip_s = replica_span * static_cast<double>(target_.chips());
  if (c_.keep_timeline) {
    for (auto& t : timelines_) r.timeline.insert(r.timeline.end(), t.begin(), t.end());
  }
  return std::move(out_);
}

}  // namespace

LlmResult simulate_llm(const std::vector<LlmRequest>& requests, const ServingTarget& target, const LlmSimConfig& config) {
  if (config.replicas < 1) throw InputError("--replicas: must be at least 1");
  if (config.scheduler.block_tokens < 1 || config.scheduler.max_batch_tokens < 1 || config.scheduler.max_batch < 1 ||
      config.scheduler.max_running < 1) {
    throw InputError("serve-llm: --block-tokens, --max-batch-tokens, --max-batch and --max-running must be at least 1");
  }
  return Simulation(requests, target, config).run();
}

}  // namespace tessera::serve::llm
