#include "sim/sweep/results.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <unordered_set>

#include "sim/common/error.h"
#include "sim/sweep/sweep_files.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace tessera::sweep {
namespace {

std::vector<std::string> split_dotted(const std::string& key) {
  std::vector<std::string> out(1);
  for (char c : key) {
    if (c == '.') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

int open_append(const fs::path& p) { return open_no_follow(p, O_WRONLY | O_APPEND | O_CREAT, "cannot open for appending"); }

}  // namespace

std::string row_to_jsonl(const Row& row) {
  ojson j;
  j["point"] = row.point;
  j["index"] = row.index;
  j["workload"] = row.workload;
  j["batch"] = row.batch;
  ojson params = ojson::object();
  for (const auto& [k, v] : row.params) params[k] = v.json();
  j["params"] = params;
  j["status"] = row.ok ? "ok" : "failed";
  j["error"] = row.ok ? ojson(nullptr) : ojson(row.error);
  ojson metrics = ojson::object();
  for (const auto& [k, v] : row.metrics) metrics[k] = v.json();
  j["metrics"] = metrics;
  // Invalid UTF-8 in an error text must not make the row unwritable.
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n";
}

std::optional<Row> row_from_jsonl(const std::string& line) {
  ojson j;
  try {
    j = ojson::parse(line);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  try {
    if (!j.is_object()) return std::nullopt;
    for (const char* key : {"point", "index", "workload", "batch", "params", "status", "error", "metrics"}) {
      if (!j.contains(key)) return std::nullopt;
    }
    Row r;
    r.point = j.at("point").get<std::string>();
    r.index = j.at("index").get<uint64_t>();
    r.workload = j.at("workload").get<std::string>();
    r.batch = j.at("batch").get<int64_t>();
    const std::string status = j.at("status").get<std::string>();
    if (status != "ok" && status != "failed") return std::nullopt;
    r.ok = status == "ok";
    if (!r.ok) r.error = j.at("error").is_string() ? j.at("error").get<std::string>() : "";
    if (!j.at("params").is_object() || !j.at("metrics").is_object()) return std::nullopt;
    for (const auto& [k, v] : j.at("params").items()) {
      auto x = value_from_json(v);
      if (!x) return std::nullopt;
      r.params.emplace_back(k, *x);
    }
    for (const auto& [k, v] : j.at("metrics").items()) {
      auto x = value_from_json(v);
      if (!x) return std::nullopt;
      r.metrics.emplace_back(k, *x);
    }
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> csv_columns(const Experiment& e) {
  std::vector<std::string> cols = {"point", "index", "workload", "batch", "status", "error"};
  for (const auto& k : e.param_keys) cols.push_back(k);
  for (const auto& m : e.metrics) cols.push_back(m.name);
  return cols;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_header(const Experiment& e) {
  std::string line;
  for (const auto& c : csv_columns(e)) line += (line.empty() ? "" : ",") + csv_field(c);
  return line + "\n";
}

std::string row_to_csv(const Experiment& e, const Row& row) {
  auto find = [](const std::vector<std::pair<std::string, Value>>& list, const std::string& key) -> std::string {
    for (const auto& [k, v] : list) {
      if (k == key) return v.text();
    }
    return "";
  };
  std::string line = csv_field(row.point) + "," + std::to_string(row.index) + "," + csv_field(row.workload) + "," +
                     std::to_string(row.batch) + "," + (row.ok ? "ok" : "failed") + "," + csv_field(row.error);
  for (const auto& k : e.param_keys) line += "," + csv_field(find(row.params, k));
  for (const auto& m : e.metrics) line += "," + csv_field(find(row.metrics, m.name));
  return line + "\n";
}

template <class Json>
std::optional<Value> report_value(const Json& report, const std::string& path, std::string* why) {
  const Json* cur = &report;
  std::string so_far;
  for (const auto& c : split_dotted(path)) {
    const std::string here = so_far.empty() ? c : so_far + "." + c;
    if (cur->is_object()) {
      auto it = cur->find(c);
      if (it == cur->end()) {
        if (why) {
          std::vector<std::string> names;
          for (const auto& [k, v] : cur->items()) names.push_back(k);
          std::sort(names.begin(), names.end());  // as nlohmann::json's std::map holds them
          std::string keys;
          for (const auto& k : names) keys += (keys.empty() ? "" : ", ") + k;
          *why = "report.json has no '" + here + "'" +
                 (keys.empty() ? "" : " (keys" + (so_far.empty() ? std::string() : " under " + so_far) + ": " + keys + ")");
        }
        return std::nullopt;
      }
      cur = &*it;
    } else if (cur->is_array()) {
      char* end = nullptr;
      const unsigned long idx = std::strtoul(c.c_str(), &end, 10);
      if (c.empty() || *end != '\0' || idx >= cur->size()) {
        if (why) *why = "report.json: '" + so_far + "' is a list of " + std::to_string(cur->size()) + "; '" + c + "' is not an index in it";
        return std::nullopt;
      }
      cur = &(*cur)[idx];
    } else {
      if (why) *why = "report.json: '" + so_far + "' is a single value; it has no '" + c + "'";
      return std::nullopt;
    }
    so_far = here;
  }
  auto v = value_from_json(*cur);
  if (!v && why) *why = "report.json: '" + path + "' is a " + (cur->is_object() ? "mapping" : "list") + ", not a single value";
  return v;
}

bool is_environment_failure(const std::string& error) {
  // Signals that come from outside the point: the OOM killer, a batch system's limits, an
  // operator. (The sweep's own --timeout kill is recorded as "timed out", which stays failed.)
  static const int kOutside[] = {SIGKILL, SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGXCPU, SIGXFSZ, SIGBUS, SIGPIPE};
  for (const int sig : kOutside) {
    if (error.rfind("killed by signal " + std::to_string(sig) + " ", 0) == 0) return true;
  }
  for (const char* prefix : {"cannot prepare the point: ", "cannot create a pipe: ", "cannot fork: ",
                             "tessera run exited 0 but its report is unreadable: ", kRankTimeoutPrefix}) {
    if (error.rfind(prefix, 0) == 0) return true;
  }
  // tessera run's own messages end with strerror(): "...: cannot write output file: No space
  // left on device"; an allocation failure is "internal error: std::bad_alloc".
  static const int kErrnos[] = {ENOSPC, EDQUOT, EFBIG, EIO, ENOMEM, EMFILE, ENFILE, EROFS, ESTALE, EAGAIN};
  size_t start = 0;
  while (start <= error.size()) {
    size_t end = error.find('\n', start);
    if (end == std::string::npos) end = error.size();
    std::string line = error.substr(start, end - start);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    for (const int err : kErrnos) {
      const std::string tail = std::string(": ") + std::strerror(err);
      if (line.size() >= tail.size() && line.compare(line.size() - tail.size(), tail.size(), tail) == 0) return true;
    }
    if (line.find("internal error: std::bad_alloc") != std::string::npos) return true;
    start = end + 1;
  }
  return false;
}

Row failed_row(const Experiment& e, const Point& p, const std::string& error) {
  Row r;
  r.point = p.id;
  r.index = p.index;
  r.workload = p.workload;
  r.batch = p.batch;
  r.params = e.params(p);
  r.ok = false;
  r.error = error.empty() ? "failed" : error;
  for (const auto& m : e.metrics) r.metrics.emplace_back(m.name, Value::null());
  return r;
}

template <class Json>
Row row_from_report(const Experiment& e, const Point& p, const Json& report) {
  Row r = failed_row(e, p, "");
  r.metrics.clear();
  std::string problem;
  for (const auto& m : e.metrics) {
    std::optional<Value> v;
    std::string why;
    if (m.expr.empty()) {
      v = report_value(report, m.path, &why);
    } else {
      try {
        v = m.expr.eval([&](const std::string& name) -> std::optional<Value> {
          std::string w;
          auto x = report_value(report, name, &w);
          if (!x) throw ExprError(w);
          return x;
        });
      } catch (const ExprError& err) {
        why = err.what();
      }
    }
    if (!v) {
      if (problem.empty()) problem = "metric '" + m.name + "': " + why;
      v = Value::null();
    }
    r.metrics.emplace_back(m.name, *v);
  }
  if (problem.empty()) {
    r.ok = true;
    r.error.clear();
  } else {
    r.error = problem;
  }
  return r;
}

template std::optional<Value> report_value(const nlohmann::json&, const std::string&, std::string*);
template std::optional<Value> report_value(const nlohmann::ordered_json&, const std::string&, std::string*);
template Row row_from_report(const Experiment&, const Point&, const nlohmann::json&);
template Row row_from_report(const Experiment&, const Point&, const nlohmann::ordered_json&);

std::optional<uint64_t> PointIdSet::hex_id(const std::string& id) {
  if (id.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (const char c : id) {
    if (c >= '0' && c <= '9') {
      v = (v << 4) | static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v = (v << 4) | static_cast<uint64_t>(c - 'a' + 10);
    } else {
      return std::nullopt;  // upper case too: "0A..." and "0a..." are different ids
    }
  }
  return v;
}

size_t PointIdSet::slot_of(uint64_t key) const {
  // Fibonacci hashing spreads ids that are not hashes (rows written by hand) as well.
  const size_t mask = slots_.size() - 1;
  size_t k = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  while (slots_[k] != 0 && slots_[k] != key) k = (k + 1) & mask;
  return k;
}

void PointIdSet::grow(size_t slots) {
  std::vector<uint64_t> old;
  old.swap(slots_);
  slots_.assign(slots, 0);
  for (const uint64_t key : old) {
    if (key != 0) slots_[slot_of(key)] = key;
  }
}

void PointIdSet::reserve(size_t ids) {
  size_t slots = 16;
  while (slots < 2 * ids) slots *= 2;  // at most half full
  if (slots > slots_.size()) grow(slots);
}

bool PointIdSet::insert(const std::string& id) {
  const auto key = hex_id(id);
  if (!key) return other_.insert(id).second;
  if (*key == 0) return !std::exchange(has_zero_, true);
  if (slots_.empty() || 2 * (hex_size_ + 1) > slots_.size()) reserve(hex_size_ + 1 + hex_size_ / 2);
  const size_t k = slot_of(*key);
  if (slots_[k] == *key) return false;
  slots_[k] = *key;
  ++hex_size_;
  return true;
}

size_t PointIdSet::count(const std::string& id) const {
  const auto key = hex_id(id);
  if (!key) return other_.count(id);
  if (*key == 0) return has_zero_ ? 1 : 0;
  if (slots_.empty()) return 0;
  return slots_[slot_of(*key)] == *key ? 1 : 0;
}

ExistingResults scan_results(const fs::path& jsonl, const std::function<void(Row&& row)>& on_row) {
  ExistingResults out;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(jsonl, ec))) return out;
  LineReader lines(jsonl);
  PointIdSet seen;
  std::string line;
  bool complete = true;
  while (lines.next(line, complete)) {
    if (!complete) {
      ++out.torn;  // no newline: the write of this line never completed
      break;
    }
    if (line.empty()) continue;
    auto row = row_from_jsonl(line);
    if (!row) {
      ++out.unreadable;
      continue;
    }
    if (!seen.insert(row->point)) {
      ++out.duplicates;
      continue;
    }
    on_row(std::move(*row));
  }
  return out;
}

ExistingResults read_results(const fs::path& jsonl) {
  std::vector<Row> rows;
  ExistingResults out = scan_results(jsonl, [&](Row&& row) { rows.push_back(std::move(row)); });
  out.rows = std::move(rows);
  return out;
}

void append_line(int fd, const std::string& line, const fs::path& path, bool sync) {
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(path.string() + ": write failed: " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) throw InputError(path.string() + ": fsync failed: " + std::strerror(errno));
}

ResultStore::ResultStore(const Experiment& e, const fs::path& dir, bool resume, bool retry_failed, double sync_interval_s)
    : e_(e), dir_(dir), sync_interval_s_(sync_interval_s) {
  try {
    open(resume, retry_failed);
  } catch (...) {
    close_all();  // the destructor does not run for a constructor that throws; release the lock
    throw;
  }
}

void ResultStore::close_all() {
  for (int* fd : {&jsonl_fd_, &csv_fd_, &lock_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void ResultStore::open(bool resume, bool retry_failed) {
  const Experiment& e = e_;
  make_output_dir(dir_);
  const fs::path lock = dir_ / ".lock";
  lock_fd_ = open_no_follow(lock, O_RDWR | O_CREAT, "cannot create");
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    throw InputError(dir_.string() + ": another sweep is writing to this directory (it holds " + lock.string() + ")");
  }
  // Holding the lock, no other sweep writes here: temporary files are leftovers of a killed
  // write (kill -9, a crash) of this directory's results or of a point's report.
  removed_temporaries_ = remove_stale_temporaries(dir_);
  std::error_code ec;
  for (fs::directory_iterator it(dir_ / "points", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) removed_temporaries_ += remove_stale_temporaries(it->path());
  }
  const fs::path jsonl = dir_ / "results.jsonl";
  const fs::path csv = dir_ / "results.csv";
  const fs::path manifest = dir_ / "sweep.json";

  ojson m;
  m["tessera_sweep_format"] = 1;
  m["experiment"] = e.name;
  m["experiment_file"] = fs::absolute(e.file).lexically_normal().string();
  m["columns"] = csv_columns(e);
  m["points"] = e.points.size();

  if (!resume) {
    size_t rows = 0;
    const ExistingResults existing = scan_results(jsonl, [&](Row&&) { ++rows; });
    if (rows > 0 || existing.torn || existing.unreadable) {
      throw InputError(jsonl.string() + ": already holds results; pass --resume to continue that sweep, or choose another --out");
    }
  } else if (std::error_code ec; fs::exists(manifest, ec)) {
    ojson old;
    try {
      old = ojson::parse(read_no_follow(manifest));
    } catch (const std::exception&) {
    }
    if (old.contains("columns") && old["columns"] != m["columns"]) {
      throw InputError(dir_.string() + ": the results there have other columns (" + old["columns"].dump(-1, ' ', false, ojson::error_handler_t::replace) +
                       ") than this experiment (" + m["columns"].dump(-1, ' ', false, ojson::error_handler_t::replace) +
                       "): the parameters or metrics changed; use another --out");
    }
  }
  PointIdSet ids;
  ids.reserve(e.points.size());
  for (const auto& p : e.points) ids.insert(p.id);
  done_.reserve(e.points.size());  // the sweep's own rows then never grow it
  // Rewrite both files from the kept rows (drops a torn line, brings the CSV in line), one row
  // at a time: a resume over 100,000 rows held them all (260 MiB) and left the heap it forks
  // from in pieces.
  ReplacementFile jsonl_new(jsonl), csv_new(csv);
  csv_new.write(csv_header(e));
  const ExistingResults existing = scan_results(jsonl, [&](Row&& row) {
    if (retry_failed && !row.ok) return;
    if (resume && !row.ok && is_environment_failure(row.error)) {
      ++retried_environment_;  // the point did not fail, its machine did: run it again
      return;
    }
    if (!ids.count(row.point)) ++stale_;
    done_.insert(row.point);
    jsonl_new.write(row_to_jsonl(row));
    csv_new.write(row_to_csv(e, row));
  });
  torn_ = existing.torn + existing.unreadable;
  replace_file(manifest, m.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n");
  jsonl_new.commit();
  csv_new.commit();
  jsonl_fd_ = open_append(jsonl);
  csv_fd_ = open_append(csv);
}

ResultStore::~ResultStore() {
  try {
    sync();
  } catch (const std::exception&) {
  }
  close_all();
}

void ResultStore::append(const Row& row) {
  if (done_.count(row.point)) return;  // never twice
  // results.jsonl first: it is the record, fsync'd in groups (sync_if_due) so that even a
  // machine crash keeps all but the last sync_interval_s of it. The CSV gets the same
  // single-write append without an fsync (a killed process loses nothing from the page cache
  // either way); a resume rebuilds it from results.jsonl.
  append_line(jsonl_fd_, row_to_jsonl(row), dir_ / "results.jsonl", false);
  append_line(csv_fd_, row_to_csv(e_, row), dir_ / "results.csv", false);
  done_.insert(row.point);
  if (!unsynced_) {
    unsynced_ = true;
    first_unsynced_ = std::chrono::steady_clock::now();
  }
  sync_if_due();
}

void ResultStore::sync_if_due() {
  if (unsynced_ && std::chrono::duration<double>(std::chrono::steady_clock::now() - first_unsynced_).count() >= sync_interval_s_) {
    sync();
  }
}

void ResultStore::sync() {
  if (!unsynced_ || jsonl_fd_ < 0) return;
  if (::fsync(jsonl_fd_) != 0) throw InputError((dir_ / "results.jsonl").string() + ": fsync failed: " + std::strerror(errno));
  unsynced_ = false;
  ++syncs_;
}

}  // namespace tessera::sweep
