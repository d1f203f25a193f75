#pragma once
// Request traces: a CSV file of `arrival_s[,size]` rows (docs/serving.md). An optional
// header names the columns; `#` starts a comment; blank lines are skipped. Every error
// names the file and line: "t.csv:7: arrival_s: '1.2.3' is not a number". The file is read a
// line at a time, within kTraceLimits (64 KiB a line, 64 GiB a file; sim/common/text_file.h),
// and the rows' memory is checked as they come.
#include <filesystem>
#include <string>

#include "sim/serve/model.h"

namespace tessera::serve {

inline constexpr uint32_t kMaxRequestSamples = 1u << 24;  // the --batch cap of `tessera run`
inline constexpr size_t kMaxTraceRequests = size_t{1} << 31;
inline constexpr double kMaxTraceArrivalS = 1e9;       // 31.7 years: every derived time stays finite
inline constexpr double kTraceBytesPerRequest = 12;    // an arrival (double) and a size (uint32)

Trace load_trace_csv(const std::filesystem::path& path);
// `origin` stands in for the file name in messages.
Trace parse_trace_csv(const std::string& text, const std::string& origin);

}  // namespace tessera::serve
