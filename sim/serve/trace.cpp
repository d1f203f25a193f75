#include "sim/serve/trace.h"

#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <string_view>

#include "sim/common/error.h"
#include "sim/common/memory_limit.h"
#include "sim/common/text_file.h"
#include "sim/serve/csv_fields.h"

namespace tessera::serve {
namespace {

// One trace, line by line (the file is never held whole: issue 34 item 5).
class TraceParser {
 public:
  explicit TraceParser(std::string origin) { tr_.source = std::move(origin); }

  void add_line(std::string_view raw_line, uint64_t line_no) {
    line_no_ = line_no;
    const std::string raw(raw_line);
    const size_t hash = raw.find('#');
    const std::string line = trim_blanks(hash == std::string::npos ? raw : raw.substr(0, hash));
    if (line.empty()) return;
    auto fields = split_trimmed(line, ',');
    if (header_allowed_) {
      header_allowed_ = false;
      const unsigned char first = fields[0].empty() ? 0 : static_cast<unsigned char>(fields[0][0]);
      if (std::isalpha(first) && fields[0] != "inf" && fields[0] != "nan") {  // a header line
        if (fields.size() == 1 && fields[0] == "arrival_s") {
          columns_ = 1;
        } else if (fields.size() == 2 && fields[0] == "arrival_s" && fields[1] == "size") {
          columns_ = 2;
        } else {
          fail("header: expected 'arrival_s' or 'arrival_s,size', got " + shown_field(line));
        }
        return;
      }
    }
    if (fields.size() > 2) fail("expected 'arrival_s' or 'arrival_s,size', got " + std::to_string(fields.size()) + " columns");
    if (columns_ == 0) columns_ = static_cast<int>(fields.size());
    if (static_cast<int>(fields.size()) != columns_) {
      fail("expected " + std::to_string(columns_) + (columns_ == 1 ? " column (arrival_s)" : " columns (arrival_s,size)") +
           " as in the rows before, got " + std::to_string(fields.size()));
    }
    const std::string& a = fields[0];
    char* end = nullptr;
    errno = 0;
    const double t = a.empty() ? 0 : std::strtod(a.c_str(), &end);
    if (a.empty() || end != a.c_str() + a.size()) fail("arrival_s: " + shown_field(a) + " is not a number");
    if (!std::isfinite(t)) fail("arrival_s: " + shown_field(a) + " is not a finite number");
    if (t < 0) fail("arrival_s: " + shown_field(a) + " is negative (seconds from the start of the trace)");
    // A finite bound keeps every time the queueing simulation derives finite (issue 34 item 1).
    if (t > kMaxTraceArrivalS) fail("arrival_s: must be in [0, 1e9] seconds (31.7 years), got " + shown_field(a));
    if (!tr_.arrival_s.empty() && t < tr_.arrival_s.back()) {
      std::ostringstream msg;
      msg.precision(17);
      msg << "arrival_s: " << t << " is before the previous request's " << tr_.arrival_s.back()
          << " (arrivals must not decrease)";
      fail(msg.str());
    }
    uint32_t size = 1;
    if (columns_ == 2) {
      const std::string& s = fields[1];
      errno = 0;
      const long long v = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE) fail("size: " + shown_field(s) + " is not an integer");
      if (v < 1 || v > static_cast<long long>(kMaxRequestSamples)) {
        fail("size: must be in [1, " + std::to_string(kMaxRequestSamples) + "] samples, got " + s);
      }
      size = static_cast<uint32_t>(v);
    }
    if (tr_.arrival_s.size() >= kMaxTraceRequests) fail("more than 2^31 requests");
    if ((tr_.arrival_s.size() & ((size_t{1} << 20) - 1)) == 0 && tr_.arrival_s.size() > 0) check_memory();
    tr_.arrival_s.push_back(t);
    tr_.size.push_back(size);
  }

  Trace finish() {
    if (tr_.arrival_s.empty()) throw InputError(tr_.source + ": the trace has no requests (expected rows of arrival_s[,size])");
    return std::move(tr_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(tr_.source + ":" + std::to_string(line_no_) + ": " + what);
  }
  // Every 2^20 rows: the rows so far, doubled (vector growth), against this process's memory.
  void check_memory() const {
    const double need = 2.0 * static_cast<double>(tr_.arrival_s.size()) * kTraceBytesPerRequest;
    const double limit = memory_limit_bytes();
    if (need > limit / 2) {
      throw InputError("--trace " + tr_.source + ":" + std::to_string(line_no_) + ": " +
                       std::to_string(tr_.arrival_s.size()) + " requests so far take about " + gib_text(need) +
                       ", more than half of what this process may use (" + gib_text(limit) +
                       "); use a shorter trace");
    }
  }

  Trace tr_;
  uint64_t line_no_ = 0;
  int columns_ = 0;  // 1 or 2 once known
  bool header_allowed_ = true;
};

}  // namespace

Trace parse_trace_csv(const std::string& text, const std::string& origin) {
  TraceParser p(origin);
  uint64_t line_no = 0;
  size_t from = 0;
  while (from < text.size()) {
    const size_t nl = text.find('\n', from);
    const size_t end = nl == std::string::npos ? text.size() : nl;
    if (end - from > kTraceLimits.max_line_bytes) {
      throw InputError(origin + ":" + std::to_string(line_no + 1) + ": line longer than the " +
                       bytes_text(kTraceLimits.max_line_bytes) + " allowed in a request trace");
    }
    p.add_line(std::string_view(text).substr(from, end - from), ++line_no);
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  return p.finish();
}

Trace load_trace_csv(const std::filesystem::path& path) {
  TraceParser p(path.string());
  try {
    for_each_line(path, kTraceLimits, [&](std::string_view line, uint64_t n) { p.add_line(line, n); }, "--trace");
  } catch (const std::bad_alloc&) {
    throw InputError("--trace " + path.string() + ": out of memory while reading the trace; use a shorter trace");
  }
  return p.finish();
}

}  // namespace tessera::serve
