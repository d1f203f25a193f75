#include "sim/serve/llm/requests.h"

#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "sim/common/error.h"
#include "sim/common/text_file.h"
#include "sim/serve/arrivals.h"
#include "sim/serve/csv_fields.h"
#include "sim/serve/trace.h"

namespace tessera::serve::llm {
namespace {

// An integer in [lo, hi], or "" with `why` set.
bool to_int(const std::string& s, int64_t lo, int64_t hi, int64_t& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size() || errno == ERANGE || x < lo || x > hi) return false;
  v = x;
  return true;
}

bool to_double(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v) && !std::isspace(static_cast<unsigned char>(s[0]));
}

const std::string kMaxText = std::to_string(kMaxRequestTokens);

// A data line of a CSV file: the comment cut and blanks trimmed; "" for a blank line.
std::string content_of(std::string_view raw) {
  std::string line(raw);
  const size_t hash = line.find('#');
  if (hash != std::string::npos) line.resize(hash);
  return trim_blanks(line);
}

}  // namespace

int64_t LengthDist::sample(Rng& rng) const {
  switch (kind) {
    case Kind::kFixed: return fixed;
    case Kind::kUniform: {
      const auto span = static_cast<uint64_t>(hi - lo + 1);
      return lo + static_cast<int64_t>(rng.next() % span);  // bias < span / 2^64
    }
    case Kind::kLognormal: {
      // mean and sd of the tokens: sigma^2 = ln(1 + sd^2 / mean^2), mu = ln(mean) - sigma^2 / 2.
      const double s2 = std::log1p((sd * sd) / (mean * mean));
      const double x = std::exp(std::log(mean) - 0.5 * s2 + std::sqrt(s2) * rng.normal());
      const double r = std::round(x);
      if (!(r >= 1)) return 1;
      return r >= static_cast<double>(max_tokens) ? max_tokens : static_cast<int64_t>(r);
    }
    case Kind::kEmpirical: return (*values)[static_cast<size_t>(rng.next() % values->size())];
  }
  return 1;
}

double LengthDist::mean_tokens() const {
  switch (kind) {
    case Kind::kFixed: return static_cast<double>(fixed);
    case Kind::kUniform: return 0.5 * static_cast<double>(lo + hi);
    case Kind::kLognormal: return mean;
    case Kind::kEmpirical: {
      double s = 0;
      for (int64_t v : *values) s += static_cast<double>(v);
      return s / static_cast<double>(values->size());
    }
  }
  return 0;
}

LengthDist parse_length_dist(const std::string& spec, const std::string& flag) {
  LengthDist d;
  d.text = spec;
  const std::string forms = "fixed:N, uniform:LO:HI, lognormal:MEAN:SD[:MAX] or csv:FILE:COLUMN";
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  auto fail = [&](const std::string& what) -> void { throw InputError(flag + ": " + kind + ": " + what); };
  auto tokens = [&](const std::string& name, const std::string& s) {
    int64_t v = 0;
    if (!to_int(s, 1, kMaxRequestTokens, v)) fail(name + " must be an integer in [1, " + kMaxText + "] tokens, got " + shown_field(s));
    return v;
  };
  if (kind == "csv") {
    // The file name may hold ':'; the column is after the last one.
    const size_t last = rest.rfind(':');
    if (rest.empty() || last == std::string::npos || last == 0 || last + 1 == rest.size()) {
      fail("expected csv:FILE:COLUMN (the empirical distribution of a column), got " + shown_field(spec));
    }
    d.kind = LengthDist::Kind::kEmpirical;
    d.values = std::make_shared<const std::vector<int64_t>>(load_token_column(rest.substr(0, last), rest.substr(last + 1), flag));
    return d;
  }
  const auto f = split_trimmed(rest, ':');
  if (kind == "fixed") {
    if (colon == std::string::npos || f.size() != 1) fail("expected fixed:N, got " + shown_field(spec));
    d.kind = LengthDist::Kind::kFixed;
    d.fixed = tokens("N", f[0]);
  } else if (kind == "uniform") {
    if (colon == std::string::npos || f.size() != 2) fail("expected uniform:LO:HI, got " + shown_field(spec));
    d.kind = LengthDist::Kind::kUniform;
    d.lo = tokens("LO", f[0]);
    d.hi = tokens("HI", f[1]);
    if (d.hi < d.lo) fail("HI (" + f[1] + ") must be at least LO (" + f[0] + ")");
  } else if (kind == "lognormal") {
    if (colon == std::string::npos || f.size() < 2 || f.size() > 3) fail("expected lognormal:MEAN:SD[:MAX], got " + shown_field(spec));
    d.kind = LengthDist::Kind::kLognormal;
    if (!to_double(f[0], d.mean) || d.mean < 1 || d.mean > static_cast<double>(kMaxRequestTokens)) {
      fail("MEAN must be a number in [1, " + kMaxText + "] tokens, got " + shown_field(f[0]));
    }
    if (!to_double(f[1], d.sd) || d.sd <= 0 || d.sd > 1e3 * d.mean) {
      fail("SD must be a number in (0, 1000 x MEAN] tokens, got " + shown_field(f[1]));
    }
    if (f.size() == 3) d.max_tokens = tokens("MAX", f[2]);
  } else {
    throw InputError(flag + ": " + shown_field(spec) + " is not a length distribution; expected " + forms);
  }
  return d;
}

namespace {

class LlmTraceParser {
 public:
  explicit LlmTraceParser(std::string origin) { tr_.source = std::move(origin); }

  void add_line(std::string_view raw, uint64_t line_no) {
    line_no_ = line_no;
    const std::string line = content_of(raw);
    if (line.empty()) return;
    const auto f = split_trimmed(line, ',');
    if (first_) {
      first_ = false;
      if (!f[0].empty() && std::isalpha(static_cast<unsigned char>(f[0][0])) && f[0] != "inf" && f[0] != "nan") {
        if (f.size() != 3 || f[0] != "arrival_s" || f[1] != "prompt_tokens" || f[2] != "output_tokens") {
          fail("header: expected 'arrival_s,prompt_tokens,output_tokens', got " + shown_field(line));
        }
        return;
      }
    }
    if (f.size() != 3) fail("expected 3 columns (arrival_s,prompt_tokens,output_tokens), got " + std::to_string(f.size()));
    LlmRequest r;
    if (!to_double(f[0], r.arrival_s)) fail("arrival_s: " + shown_field(f[0]) + " is not a finite number");
    if (r.arrival_s < 0 || r.arrival_s > kMaxTraceArrivalS) fail("arrival_s: must be in [0, 1e9] seconds, got " + shown_field(f[0]));
    if (!tr_.requests.empty() && r.arrival_s < tr_.requests.back().arrival_s) {
      fail("arrival_s: " + f[0] + " is before the previous request's (arrivals must not decrease)");
    }
    if (!to_int(f[1], 1, kMaxRequestTokens, r.prompt_tokens)) {
      fail("prompt_tokens: must be an integer in [1, " + kMaxText + "], got " + shown_field(f[1]));
    }
    if (!to_int(f[2], 1, kMaxRequestTokens, r.output_tokens)) {
      fail("output_tokens: must be an integer in [1, " + kMaxText + "], got " + shown_field(f[2]));
    }
    if (tr_.requests.size() >= (size_t{1} << 26)) fail("more than 2^26 requests");
    tr_.requests.push_back(r);
  }

  LlmTrace finish() {
    if (tr_.requests.empty()) {
      throw InputError(tr_.source + ": the trace has no requests (expected rows of arrival_s,prompt_tokens,output_tokens)");
    }
    return std::move(tr_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(tr_.source + ":" + std::to_string(line_no_) + ": " + what); }
  LlmTrace tr_;
  uint64_t line_no_ = 0;
  bool first_ = true;
};

}  // namespace

LlmTrace parse_llm_trace_csv(const std::string& text, const std::string& origin) {
  LlmTraceParser p(origin);
  uint64_t n = 0;
  size_t from = 0;
  while (from < text.size()) {
    const size_t nl = text.find('\n', from);
    const size_t end = nl == std::string::npos ? text.size() : nl;
    p.add_line(std::string_view(text).substr(from, end - from), ++n);
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  return p.finish();
}

LlmTrace load_llm_trace_csv(const std::filesystem::path& path) {
  LlmTraceParser p(path.string());
  for_each_line(path, kTraceLimits, [&](std::string_view line, uint64_t n) { p.add_line(line, n); }, "--trace");
  return p.finish();
}

std::vector<int64_t> load_token_column(const std::filesystem::path& path, const std::string& column, const std::string& flag) {
  if (const std::string why = not_a_regular_file(path); !why.empty()) {
    throw InputError(flag + " " + path.string() + ": cannot read the CSV file: " + why);
  }
  std::vector<int64_t> out;
  int index = -1;
  for_each_line(
      path, kTraceLimits,
      [&](std::string_view raw, uint64_t n) {
        const std::string line = content_of(raw);
        if (line.empty()) return;
        const auto f = split_trimmed(line, ',');
        const std::string at = path.string() + ":" + std::to_string(n) + ": ";
        if (index < 0) {
          for (size_t i = 0; i < f.size(); ++i) {
            if (f[i] == column) index = static_cast<int>(i);
          }
          if (index < 0) throw InputError(flag + ": " + at + "the header has no column '" + column + "' (it has " + line + ")");
          return;
        }
        if (static_cast<size_t>(index) >= f.size()) throw InputError(flag + ": " + at + "no column " + column + " in this row");
        int64_t v = 0;
        if (!to_int(f[static_cast<size_t>(index)], 1, kMaxRequestTokens, v)) {
          throw InputError(flag + ": " + at + column + ": must be an integer in [1, " + kMaxText + "] tokens, got " +
                           shown_field(f[static_cast<size_t>(index)]));
        }
        out.push_back(v);
      },
      flag);
  if (out.empty()) throw InputError(flag + ": " + path.string() + ": column '" + column + "' has no values");
  return out;
}

std::vector<LlmRequest> generate_requests(const RequestSpec& spec) {
  std::vector<LlmRequest> out;
  const bool from_trace = spec.trace != nullptr;
  const uint64_t n = from_trace ? std::min<uint64_t>(spec.requests, spec.trace->requests.size()) : spec.requests;
  out.reserve(n);
  // A trace's arrival times go through the serving simulation's trace arrivals (time-scaled to the rate).
  ArrivalSpec arrivals = spec.arrivals;
  if (arrivals.kind == ArrivalKind::kTrace) {
    auto t = std::make_shared<Trace>();
    t->source = spec.trace->source;
    for (uint64_t k = 0; k < n; ++k) {
      t->arrival_s.push_back(spec.trace->requests[k].arrival_s);
      t->size.push_back(1);
    }
    arrivals.trace = t;
  }
  ArrivalProcess gaps(arrivals, spec.seed);
  Rng prompt_rng = stream(spec.seed, Stream::kPromptTokens);
  Rng output_rng = stream(spec.seed, Stream::kOutputTokens);
  double t = 0;
  for (uint64_t k = 0; k < n; ++k) {
    if (k > 0) t += gaps.gap(k);
    LlmRequest r;
    r.arrival_s = t;
    if (from_trace) {
      r.prompt_tokens = spec.trace->requests[k].prompt_tokens;
      r.output_tokens = spec.trace->requests[k].output_tokens;
    } else {
      r.prompt_tokens = spec.prompt.sample(prompt_rng);
      r.output_tokens = spec.output.sample(output_rng);
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace tessera::serve::llm
