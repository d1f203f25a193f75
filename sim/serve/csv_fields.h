#pragma once
// The fields of a line of a trace CSV (sim/serve/trace.cpp: arrival times; sim/serve/llm/
// requests.cpp: LLM requests and length distributions), and a field as an error shows it.
#include <string>
#include <vector>

namespace tessera::serve {

// `s` without leading and trailing blanks (spaces, tabs, a CR of a CRLF file).
std::string trim_blanks(const std::string& s);
// The fields of `line` between `sep`s, each trimmed.
std::vector<std::string> split_trimmed(const std::string& line, char sep);
// A field quoted for an error message: at most 40 characters, control bytes as '?'.
std::string shown_field(const std::string& field);

}  // namespace tessera::serve
