#pragma once
// Result rows of a sweep and the files that hold them:
//   results.jsonl  one JSON object per line, one line per finished point (the source of truth)
//   results.csv    the same rows as CSV with a header (regenerated from results.jsonl on resume)
// A row is appended with a single write() of the whole line to a file opened O_APPEND before
// it counts as done, so a kill at any moment leaves complete rows plus at most one torn last
// line, which a resume detects and drops. results.jsonl is fsync'd in groups, at most
// `sync_interval_s` after a row (issue 35: one fsync per row cost more than many points), so
// that a machine crash, too, loses at most that much.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "sim/sweep/experiment.h"

namespace tessera::sweep {

struct Row {
  std::string point;
  uint64_t index = 0;
  std::string workload;
  int64_t batch = 0;
  Params params;
  bool ok = false;
  std::string error;  // empty when ok
  std::vector<std::pair<std::string, Value>> metrics;  // in Experiment::metrics order; null when failed
};

// {"point":..,"index":..,"workload":..,"batch":..,"params":{..},"status":"ok"|"failed","error":null|"..","metrics":{..}}
// Compact JSON and a trailing '\n'.
std::string row_to_jsonl(const Row& row);
// Parses one line (without the '\n'); nullopt if it is not a complete row.
std::optional<Row> row_from_jsonl(const std::string& line);

std::vector<std::string> csv_columns(const Experiment& e);
std::string csv_header(const Experiment& e);
std::string row_to_csv(const Experiment& e, const Row& row);
std::string csv_field(const std::string& text);  // RFC 4180 quoting where needed

// The row of a point from its report.json (ok, or failed when a metric is missing), and of a
// failed point from its error text.
// A report as `tessera run` wrote it (nlohmann::json, read back) or as a point in process
// built it (nlohmann::ordered_json, not copied): the same row either way.
template <class Json = nlohmann::json>
Row row_from_report(const Experiment& e, const Point& p, const Json& report);
Row failed_row(const Experiment& e, const Point& p, const std::string& error);
// True when a failed point's error text says the environment failed, not the point: out of
// disk space or memory, an I/O error, killed by a signal from outside (the OOM killer's
// SIGKILL, SIGTERM, SIGXCPU...), a sweep-side problem preparing it, an MPI rank that never
// answered. `--resume` runs such points again; a crash of the simulator itself (SIGSEGV,
// SIGABRT) and every input error stay failed (`--retry-failed` reruns those).
bool is_environment_failure(const std::string& error);
// The error text that starts a row of a point whose MPI rank did not answer in time.
inline constexpr const char* kRankTimeoutPrefix = "no result from MPI rank ";

// A metric value from a report: dotted path, numeric components index lists.
// A "report.json has no 'x' (keys: ...)" message lists the keys in sorted order, for either kind of report.
template <class Json = nlohmann::json>
std::optional<Value> report_value(const Json& report, const std::string& path, std::string* why = nullptr);

// A set of point ids: 64-bit integers in one flat open-addressing table (a point id is 16 hex
// digits, Point::id), not strings in tree nodes. 100,000 such nodes, allocated in between the
// rows a resume parsed, stayed scattered over the sweep process's heap once the rows were
// freed: the heap could not be returned to the system and the forked points copied the pages
// their allocations touched (issue 35: 1.35x the CPU per point at 100,000 rows).
class PointIdSet {
 public:
  void reserve(size_t ids);  // room for this many without growing
  bool insert(const std::string& id);  // false if it was there
  size_t count(const std::string& id) const;
  size_t size() const { return hex_size_ + (has_zero_ ? 1 : 0) + other_.size(); }

 private:
  static std::optional<uint64_t> hex_id(const std::string& id);
  size_t slot_of(uint64_t key) const;
  void grow(size_t slots);
  std::vector<uint64_t> slots_;  // 0 = empty (the id 0000000000000000 is has_zero_)
  size_t hex_size_ = 0;
  bool has_zero_ = false;
  std::unordered_set<std::string> other_;  // ids that are not 16 lowercase hex digits (a row edited by hand)
};

// Reads results.jsonl: complete, parseable rows in file order, first occurrence of each point.
struct ExistingResults {
  std::vector<Row> rows;
  size_t torn = 0;        // a last line without '\n' (killed mid-write)
  size_t unreadable = 0;  // other lines that are not rows
  size_t duplicates = 0;
};
ExistingResults read_results(const std::filesystem::path& jsonl);
// The same one row at a time (`rows` stays empty): a resume of 100,000 rows holds one.
ExistingResults scan_results(const std::filesystem::path& jsonl, const std::function<void(Row&& row)>& on_row);

// Owns results.jsonl/results.csv in a sweep directory (one writer: the local runner or MPI rank 0).
class ResultStore {
 public:
  // Fresh: creates the files (fails if results.jsonl already holds rows). Resume: rewrites both
  // files from the complete rows (dropping a torn line, the rows of points that failed for
  // reasons of the environment and, with retry_failed, all failed rows).
  ResultStore(const Experiment& e, const std::filesystem::path& dir, bool resume, bool retry_failed,
              double sync_interval_s = 0);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  const PointIdSet& done() const { return done_; }
  size_t dropped_torn() const { return torn_; }
  size_t stale() const { return stale_; }  // rows of points no longer in the experiment
  size_t retried_environment() const { return retried_environment_; }  // such rows dropped on resume
  size_t removed_temporaries() const { return removed_temporaries_; }  // *.tmp.* left by a killed write
  void append(const Row& row);
  // fsyncs results.jsonl when a row has waited `sync_interval_s`; runners call it as they poll.
  void sync_if_due();
  void sync();  // now, if a row is unsynced (also on destruction)
  size_t syncs() const { return syncs_; }  // fsyncs of results.jsonl since opening

 private:
  void open(bool resume, bool retry_failed);
  void close_all();

  const Experiment& e_;
  std::filesystem::path dir_;
  int jsonl_fd_ = -1;
  int csv_fd_ = -1;
  int lock_fd_ = -1;
  PointIdSet done_;
  size_t torn_ = 0;
  size_t stale_ = 0;
  size_t removed_temporaries_ = 0;
  size_t retried_environment_ = 0;
  double sync_interval_s_ = 0;
  bool unsynced_ = false;
  std::chrono::steady_clock::time_point first_unsynced_;
  size_t syncs_ = 0;
};

// Appends `line` with one write() (retrying only the unwritten rest), then fsyncs if `sync`.
void append_line(int fd, const std::string& line, const std::filesystem::path& path, bool sync);

}  // namespace tessera::sweep
