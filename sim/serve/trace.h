#pragma once
// Request traces: a CSV file of `arrival_s[,size]` rows (docs/serving.md). An optional
// header names the columns; `#` starts a comment; blank lines are skipped. Every error
// names the file and line: "t.csv:7: arrival_s: '1.2.3' is not a number".
#include <filesystem>
#include <string>

#include "sim/serve/model.h"

namespace tessera::serve {

inline constexpr uint32_t kMaxRequestSamples = 1u << 24;  // the --batch cap of `tessera run`
inline constexpr size_t kMaxTraceRequests = size_t{1} << 31;

Trace load_trace_csv(const std::filesystem::path& path);
// `origin` stands in for the file name in messages.
Trace parse_trace_csv(const std::string& text, const std::string& origin);

}  // namespace tessera::serve
