#include "sim/serve/service_runs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "sim/common/config_files_hash.h"
#include "sim/common/error.h"
#include "sim/common/fnv_hash.h"
#include "sim/common/yaml_reader.h"
#include "sim/graph/graph.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/results.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/sweep_files.h"

namespace fs = std::filesystem;

namespace tessera::serve {
namespace {

constexpr int kCacheVersion = 1;


// The hash of everything but the batch, computed once per request.
uint64_t request_hash(const ServiceRequest& r) {
  Fnv1a64 f;
  f.add_line("tessera serve service times v" + std::to_string(kCacheVersion));
  f.add_file(r.runner_exe);
  add_config_files(f, r.arch);  // and its `base:` chain
  f.add_file(r.workload);
  f.add_line("precision " + r.precision);
  if (fs::is_regular_file(r.precision)) f.add_file(r.precision);
  for (const auto& s : r.input_shapes) f.add_line("input_shape " + s);
  const char* env = std::getenv("TESSERA_BASELINES_DIR");
  for (const auto& b : r.baselines) {
    f.add_line("baseline " + b);
    const std::string spec = b.substr(0, b.find(':'));
    if (fs::is_regular_file(spec)) {
      f.add_file(spec);
    } else if (env && *env) {
      f.add_file(fs::path(env) / (spec + ".yaml"));
    }
  }
  return f.value;
}

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

// The experiment that runs the missing batch sizes: the config as its base, the workload at
// those batches, the precision as a (one-value) run option.
sweep::Experiment make_experiment(const ServiceRequest& r, const std::vector<int64_t>& batches) {
  std::ostringstream y;
  y << "name: serve-service-times\n";
  y << "base: " << json_string(r.arch.string()) << "\n";
  y << "workloads:\n  - path: " << json_string(r.workload.string()) << "\n    name: workload\n    batch: [";
  for (size_t k = 0; k < batches.size(); ++k) y << (k ? ", " : "") << batches[k];
  y << "]\n";
  if (!r.input_shapes.empty()) {
    y << "    input_shapes: [";
    for (size_t k = 0; k < r.input_shapes.size(); ++k) y << (k ? ", " : "") << json_string(r.input_shapes[k]);
    y << "]\n";
  }
  y << "parameters:\n  grid:\n    precision: [" << json_string(r.precision) << "]\n";
  y << "metrics: [summary.latency_s]\n";
  sweep::Experiment e = sweep::parse_experiment(YamlNode::load_string(y.str(), "<tessera serve>"), r.cache_dir);
  if (!r.baselines.empty()) {
    std::string list;
    for (const auto& b : r.baselines) list += (list.empty() ? "" : ",") + b;
    e.extra_run_arguments = {"--baseline", list};
  }
  return e;
}

double number_at(const nlohmann::json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].contains(b) || !j[a][b].is_number()) {
    throw std::runtime_error(std::string("report.json has no number at ") + a + "." + b);
  }
  return j[a][b].get<double>();
}

// One batch size's entry of the cache from the run's report.json.
nlohmann::json entry_from_report(const nlohmann::json& rep, int64_t batch) {
  nlohmann::json e;
  e["batch"] = batch;
  e["workload"] = rep.at("workload").at("name");
  nlohmann::json platforms = nlohmann::json::array();
  platforms.push_back({{"name", rep.at("arch").at("name")},
                       {"display_name", rep.at("arch").at("name")},
                       {"kind", "accelerator"},
                       {"service_s", number_at(rep, "summary", "latency_s")},
                       {"pcie_bytes", number_at(rep, "summary", "pcie_bytes_to_device") +
                                          number_at(rep, "summary", "pcie_bytes_to_host")}});
  if (rep.contains("baselines")) {
    for (const auto& b : rep["baselines"]) {
      double bytes = 0;
      if (b.contains("host_link_transfers")) {
        bytes = b["host_link_transfers"].value("to_device_bytes", 0.0) + b["host_link_transfers"].value("to_host_bytes", 0.0);
      }
      platforms.push_back({{"name", b.at("name")},
                           {"display_name", b.value("display_name", b.at("name").get<std::string>())},
                           {"kind", b.value("kind", "baseline")},
                           {"service_s", number_at(b, "summary", "latency_s")},
                           {"pcie_bytes", bytes}});
    }
  }
  e["platforms"] = platforms;
  return e;
}

class CacheLock {
 public:
  explicit CacheLock(const fs::path& dir) {
    const fs::path lock = dir / ".lock";
    fd_ = sweep::open_no_follow(lock, O_RDWR | O_CREAT, "cannot create");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw InputError(dir.string() + ": another tessera serve is using this service-time cache (it holds " +
                       lock.string() + "); wait for it or pass another --cache");
    }
  }
  ~CacheLock() { ::close(fd_); }
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;
};

nlohmann::json read_cache(const fs::path& file, bool quiet) {
  nlohmann::json empty = {{"format", "tessera-serve-service-times"}, {"version", kCacheVersion}, {"entries", nlohmann::json::object()}};
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return empty;
  try {
    nlohmann::json j = nlohmann::json::parse(sweep::read_no_follow(file));
    if (j.value("format", "") == "tessera-serve-service-times" && j.value("version", 0) == kCacheVersion &&
        j.contains("entries") && j["entries"].is_object()) {
      return j;
    }
  } catch (const sweep::UnsafeOutputPath&) {
    throw;
  } catch (const std::exception&) {
  }
  if (!quiet) std::cerr << "serve: " << file.string() << " is not a service-time cache of this version; starting it anew\n";
  return empty;
}

}  // namespace

std::string service_cache_key(const ServiceRequest& request, int64_t batch) {
  Fnv1a64 f;
  f.value = request_hash(request);
  f.add_line("batch " + std::to_string(batch));
  return f.hex();
}

int64_t workload_default_batch(const fs::path& workload) {
  const std::string ext = workload.extension().string();
  if (ext != ".yaml" && ext != ".yml") return 0;
  return graph::load_graph_yaml(workload).default_batch;
}

ServiceTables service_tables(const ServiceRequest& r) {
  sweep::make_output_dir(r.cache_dir);
  CacheLock lock(r.cache_dir);
  const fs::path cache_file = r.cache_dir / kServiceCacheFile;
  nlohmann::json cache = read_cache(cache_file, r.quiet);

  const uint64_t base = request_hash(r);
  auto key_of = [&](int64_t b) {
    Fnv1a64 f;
    f.value = base;
    f.add_line("batch " + std::to_string(b));
    return f.hex();
  };
  std::vector<int64_t> missing;
  for (int64_t b : r.batches) {
    if (!cache["entries"].contains(key_of(b))) missing.push_back(b);
  }

  ServiceTables out;
  out.cached = r.batches.size() - missing.size();
  out.simulated = missing.size();
  if (!missing.empty()) {
    const sweep::Experiment e = make_experiment(r, missing);
    sweep::RunSettings s;
    s.out_dir = r.cache_dir;
    s.runner_exe = r.runner_exe;
    s.jobs = std::max(1, r.jobs);
    s.keep_reports = true;
    if (!r.quiet) {
      std::cerr << "serve: simulating " << missing.size() << " batch size(s) (" << s.jobs << " at a time; "
                << out.cached << " from the cache " << cache_file.string() << ")\n";
    }
    sweep::LocalPool pool(e, s);
    std::map<std::string, const sweep::Point*> by_id;
    for (const auto& p : e.points) by_id[p.id] = &p;
    size_t next = 0, done = 0;
    std::string first_error;
    bool input_error = false;
    while (done < e.points.size()) {
      while (pool.has_room() && next < e.points.size()) pool.start(e.points[next++]);
      for (const sweep::Row& row : pool.poll(200)) {
        ++done;
        const sweep::Point& p = *by_id.at(row.point);
        if (!row.ok) {
          if (first_error.empty()) {
            first_error = "batch " + std::to_string(p.batch) + ": " + row.error;
            input_error = row.error.rfind("exit 2", 0) == 0;
          }
          continue;
        }
        const fs::path report = r.cache_dir / "points" / p.id / "report.json";
        const nlohmann::json rep = nlohmann::json::parse(sweep::read_no_follow(report));
        cache["entries"][key_of(p.batch)] = entry_from_report(rep, p.batch);
      }
    }
    // What finished is kept even when another batch size failed: a rerun simulates only the rest.
    sweep::replace_file(cache_file, cache.dump(1) + "\n");
    if (!first_error.empty()) {
      std::string msg = "simulating the service times: " + first_error;
      if (input_error) throw InputError(msg);
      throw std::runtime_error(msg);
    }
  }

  for (int64_t b : r.batches) {
    const nlohmann::json& entry = cache["entries"][key_of(b)];
    const auto& plats = entry.at("platforms");
    if (out.platforms.empty()) {
      out.workload_name = entry.at("workload").get<std::string>();
      for (const auto& p : plats) {
        PlatformService ps;
        ps.name = p.at("name").get<std::string>();
        ps.display_name = p.at("display_name").get<std::string>();
        ps.kind = p.at("kind").get<std::string>();
        ps.table.platform = ps.name;
        out.platforms.push_back(std::move(ps));
      }
    }
    if (plats.size() != out.platforms.size()) throw std::runtime_error("serve: the service-time cache is inconsistent");
    for (size_t k = 0; k < plats.size(); ++k) {
      ServiceTable& t = out.platforms[k].table;
      t.batches.push_back(b);
      t.service_s.push_back(plats[k].at("service_s").get<double>());
      t.pcie_bytes.push_back(plats[k].at("pcie_bytes").get<double>());
    }
  }
  return out;
}

}  // namespace tessera::serve
