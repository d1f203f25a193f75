#include "models/baseline/host_blas.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "sim/common/error.h"

#ifdef TESSERA_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>
#endif

namespace tessera::baseline {

double HostMeasurement::total_s() const {
  double t = 0;
  for (const auto& l : layers) t += l.seconds;
  return t;
}

bool host_blas_available() {
#ifdef TESSERA_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

#ifndef TESSERA_HAVE_OPENBLAS

HostMeasurement measure_host(const Workload&, const HostOptions&) {
  throw InputError(
      "baseline 'host': this tessera was built without OpenBLAS; install libopenblas-dev "
      "(bash cmake/run.sh build does) and rebuild");
}

#else

namespace {

using Clock = std::chrono::steady_clock;

// OpenBLAS is loaded when the `host` baseline first runs, not at process start: linked
// in, it and libgfortran cost every process their relocations and OpenBLAS's start-up
// (its thread pool), which is most of the start-up of a short run (issue 19 item 4).
struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&openblas_get_num_threads) get_num_threads = nullptr;
  decltype(&openblas_get_config) get_config = nullptr;
};

const Blas& blas() {
  static const Blas b = [] {
    void* lib = nullptr;
    std::string tried;
    for (const char* name : {"libopenblas.so.0", TESSERA_OPENBLAS_LIBRARY}) {
      lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
      const char* why = ::dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (why != nullptr ? why : name);
    }
    if (lib == nullptr) {
      throw InputError("baseline 'host': cannot load OpenBLAS (" + tried +
                       "); install libopenblas0 (bash cmake/run.sh build does)");
    }
    Blas out;
    auto symbol = [&](const char* name) {
      void* p = ::dlsym(lib, name);
      if (p == nullptr) throw InputError(std::string("baseline 'host': OpenBLAS has no symbol ") + name);
      return p;
    };
    out.sgemm = reinterpret_cast<decltype(out.sgemm)>(symbol("cblas_sgemm"));
    out.get_num_threads = reinterpret_cast<decltype(out.get_num_threads)>(symbol("openblas_get_num_threads"));
    out.get_config = reinterpret_cast<decltype(out.get_config)>(symbol("openblas_get_config"));
    return out;
  }();
  return b;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Timing {
  double median = 0, min = 0, max = 0;
  int repeats = 0;
};

Timing time_calls(const std::function<void()>& fn, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  t.reserve(static_cast<size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    fn();
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  Timing out;
  out.repeats = repeats;
  out.min = t.front();
  out.max = t.back();
  const size_t h = t.size() / 2;
  out.median = t.size() % 2 ? t[h] : 0.5 * (t[h - 1] + t[h]);
  return out;
}

// A layer's timing: the spread of the calls, and its time, the median call scaled up
// from the rows run to the whole layer.
void record_timing(const Timing& t, HostLayerMeasurement& r) {
  r.median_s = t.median;
  r.min_s = t.min;
  r.max_s = t.max;
  r.repeats = t.repeats;
  r.seconds = t.median * r.scale;
}

// Deterministic non-trivial contents (no denormals, no zeros that a kernel could skip).
void fill(std::vector<float>& v, float seed) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed + 0.001f * static_cast<float>(i % 997);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(' '));
        return v;
      }
    }
  }
  return "unknown";
}

volatile float g_sink = 0;  // keeps results alive

void sgemm(int64_t m, int64_t k, int64_t n, const float* a, const float* b, float* c) {
  blas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c,
              static_cast<int>(n));
}

HostLayerMeasurement measure_matrix(const LayerWork& l, const HostOptions& o, int repeats) {
  HostLayerMeasurement r;
  if (l.m <= 0 || l.k <= 0 || l.n <= 0) return r;
  r.measured = true;
  r.full_rows = l.m;
  const double gflop = 2.0 * static_cast<double>(l.m) * static_cast<double>(l.k) * static_cast<double>(l.n) / 1e9;
  int64_t rows = l.m;
  if (gflop > o.max_gflop_per_call) {
    rows = static_cast<int64_t>(std::ceil(static_cast<double>(l.m) * o.max_gflop_per_call / gflop));
  }
  // Keep the streamed operand and the output under 256 MiB each as well.
  const int64_t row_bytes = 4 * std::max(l.k, l.n);
  rows = std::clamp<int64_t>(std::min(rows, (int64_t{256} << 20) / std::max<int64_t>(row_bytes, 1)), 1, l.m);
  r.run_rows = rows;
  // Grouped or recurrent layers do other than m*k*n MACs: the time follows the MACs.
  const double shape_macs = static_cast<double>(l.m) * static_cast<double>(l.k) * static_cast<double>(l.n);
  const double macs_factor = l.macs > 0 ? static_cast<double>(l.macs) / shape_macs : 1.0;
  r.scale = static_cast<double>(l.m) / static_cast<double>(rows) * macs_factor;
  std::vector<float> a(static_cast<size_t>(rows * l.k)), b(static_cast<size_t>(l.k * l.n)),
      c(static_cast<size_t>(rows * l.n));
  fill(a, 0.5f);
  fill(b, 0.25f);
  const Timing t = time_calls([&] { sgemm(rows, l.k, l.n, a.data(), b.data(), c.data()); }, o.warmup, repeats);
  g_sink = c[c.size() / 2];
  record_timing(t, r);
  return r;
}

HostLayerMeasurement measure_vector(const LayerWork& l, const HostOptions& o, int repeats) {
  HostLayerMeasurement r;
  r.measured = true;
  int64_t in_total = 0;
  for (const auto& i : l.inputs) in_total += i.elements;
  const int64_t out_n = std::max<int64_t>(l.output.elements, 1);
  const int64_t touched = in_total + out_n;
  const double fraction = std::min(1.0, static_cast<double>(o.max_elements_per_call) / static_cast<double>(touched));
  const int64_t run_out = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(out_n) * fraction)));
  r.full_rows = out_n;
  r.run_rows = run_out;
  r.scale = static_cast<double>(out_n) / static_cast<double>(run_out);

  std::vector<std::vector<float>> ins;
  for (const auto& i : l.inputs) {
    const auto e = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(i.elements) / r.scale)));
    ins.emplace_back(static_cast<size_t>(e));
    fill(ins.back(), 0.1f * static_cast<float>(ins.size()));
  }
  if (ins.empty()) ins.emplace_back(static_cast<size_t>(run_out), 0.5f);
  std::vector<float> out(static_cast<size_t>(run_out));
  const std::string& op = l.op;
  std::function<void()> fn;
  if ((op == "add" || op == "mul") && ins.size() >= 2) {
    const bool add = op == "add";
    fn = [&, add] {
      const size_t n = std::min({out.size(), ins[0].size(), ins[1].size()});
      const float* x = ins[0].data();
      const float* y = ins[1].data();
      float* z = out.data();
      if (add) {
        for (size_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
      } else {
        for (size_t i = 0; i < n; ++i) z[i] = x[i] * y[i];
      }
      for (size_t j = 2; j < ins.size(); ++j) {
        const float* w = ins[j].data();
        const size_t m = std::min(n, ins[j].size());
        for (size_t i = 0; i < m; ++i) z[i] = add ? z[i] + w[i] : z[i] * w[i];
      }
    };
  } else if (op == "relu" || op == "sigmoid" || op == "tanh") {
    fn = [&] {
      const size_t n = std::min(out.size(), ins[0].size());
      const float* x = ins[0].data();
      float* z = out.data();
      if (op == "relu") {
        for (size_t i = 0; i < n; ++i) z[i] = x[i] > 0 ? x[i] : 0.0f;
      } else if (op == "sigmoid") {
        for (size_t i = 0; i < n; ++i) z[i] = 1.0f / (1.0f + std::exp(-x[i]));
      } else {
        for (size_t i = 0; i < n; ++i) z[i] = std::tanh(x[i]);
      }
    };
  } else if (op == "maxpool" || op == "avgpool" || op == "global_avgpool") {
    const bool max = op == "maxpool";
    fn = [&, max] {
      const std::vector<float>& x = ins[0];
      const size_t window = std::max<size_t>(1, x.size() / out.size());
      for (size_t j = 0; j < out.size(); ++j) {
        const size_t b = std::min(j * window, x.size() - 1), e = std::min(b + window, x.size());
        float acc = max ? x[b] : 0.0f;
        for (size_t i = b; i < e; ++i) acc = max ? std::max(acc, x[i]) : acc + x[i];
        out[j] = max ? acc : acc / static_cast<float>(e - b);
      }
    };
  } else {  // concat and anything else: a copy of every input into the output
    fn = [&] {
      size_t at = 0;
      for (const auto& x : ins) {
        const size_t n = std::min(x.size(), out.size() - std::min(at, out.size()));
        std::memcpy(out.data() + at, x.data(), n * sizeof(float));
        at += n;
      }
    };
  }
  const Timing t = time_calls(fn, o.warmup, repeats);
  g_sink = out[out.size() / 2];
  record_timing(t, r);
  return r;
}

double measure_sgemm_peak(const HostOptions& o) {
  const int64_t s = 1024;
  std::vector<float> a(static_cast<size_t>(s * s)), b(a.size()), c(a.size());
  fill(a, 0.5f);
  fill(b, 0.25f);
  const Timing t = time_calls([&] { sgemm(s, s, s, a.data(), b.data(), c.data()); }, std::max(1, o.warmup), 5);
  g_sink = c[7];
  return 2.0 * static_cast<double>(s * s * s) / t.median / 1e12;
}

double measure_triad(const HostOptions& o) {
  const size_t n = (size_t{64} << 20) / sizeof(float);
  std::vector<float> a(n), b(n), c(n);
  fill(b, 0.5f);
  fill(c, 0.25f);
  const Timing t = time_calls(
      [&] {
        for (size_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
      },
      std::max(1, o.warmup), 5);
  g_sink = a[n / 3];
  return 3.0 * static_cast<double>(n * sizeof(float)) / t.median / 1e9;
}

}  // namespace

HostMeasurement measure_host(const Workload& work, const HostOptions& options) {
  HostMeasurement out;
  out.options = options;
  out.cpu_model = cpu_model();
  out.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  out.blas_threads = blas().get_num_threads();
  out.blas_config = blas().get_config();
  out.sgemm_tflops = measure_sgemm_peak(options);
  out.triad_gb_per_s = measure_triad(options);
  const auto t0 = Clock::now();
  for (const LayerWork& l : work.layers) {
    int repeats = std::max(1, options.repeats);
    if (seconds_since(t0) > options.budget_s) {
      out.budget_exhausted = true;
      repeats = 1;
    }
    if (l.layout_only) {
      out.layers.emplace_back();
    } else if (l.matrix) {
      out.layers.push_back(measure_matrix(l, options, repeats));
    } else {
      out.layers.push_back(measure_vector(l, options, repeats));
    }
  }
  return out;
}

#endif

}  // namespace tessera::baseline
