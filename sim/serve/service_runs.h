#pragma once
// Service times per batch size from the SystemC model: one `tessera run` per batch size, each
// in its own child process (SystemC elaborates once per process), started through the
// sweep's runner (sim/sweep/runner.h LocalPool), and memoized in a cache directory so that a
// second `tessera serve` on the same inputs runs no simulation at all.
//
// One run at batch b gives the accelerator's time for the batch (summary.latency_s, the PCIe
// transfers the compiled program makes included) and its host <-> device bytes
// (summary.pcie_bytes_to_device + _to_host), and, with baselines, each baseline's time for
// the same batch and its host-link bytes (baselines[k].summary.latency_s,
// host_link_transfers): the CPU/GPU rows of the serving study come from the same runs.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sim/serve/model.h"

namespace tessera::serve {

struct ServiceRequest {
  std::filesystem::path arch;      // absolute
  std::filesystem::path workload;  // absolute
  std::string precision = "int8";  // a policy name or an absolute policy file path
  std::vector<std::string> input_shapes;  // "NAME=d0,d1,..." (ONNX)
  std::vector<std::string> baselines;     // names or absolute spec paths, no duplicates
  std::vector<int64_t> batches;           // ascending, no duplicates
  std::filesystem::path cache_dir;        // absolute; created if missing
  std::filesystem::path runner_exe;       // the `tessera` executable
  int jobs = 1;                           // concurrent simulations
  bool quiet = false;                     // no progress on stderr
};

struct PlatformService {
  std::string name;          // "tpu-v1" (the config's name), "k80", ...
  std::string display_name;  // the baseline's display name; the config's name for the accelerator
  std::string kind;          // "accelerator", "cpu", "gpu"
  ServiceTable table;
};

struct ServiceTables {
  std::string workload_name;   // report.json workload.name
  std::vector<PlatformService> platforms;  // the accelerator first, then the baselines in order
  size_t simulated = 0;        // batch sizes simulated by this call
  size_t cached = 0;           // ... found in the cache
};

// Simulates the batch sizes the cache does not hold (request.jobs at a time), then returns
// every platform's table over request.batches. A run that fails with bad input (exit 2)
// throws InputError with its message; any other failure a runtime_error.
ServiceTables service_tables(const ServiceRequest& request);

// The cache key of one batch size of `request`: a hash of the bytes of the inputs that decide
// the result (config, workload, precision policy file, baseline spec files, the `tessera`
// executable) and of the options (precision, input shapes, baselines, batch).
std::string service_cache_key(const ServiceRequest& request, int64_t batch);

// The file in the cache directory that holds the memoized tables.
inline constexpr const char* kServiceCacheFile = "service_times.json";

// The YAML workload's own `batch:` (the default of --batch), or 0 for a non-YAML workload.
int64_t workload_default_batch(const std::filesystem::path& workload);

}  // namespace tessera::serve
