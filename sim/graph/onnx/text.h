#pragma once
// Private to the ONNX importer: text helpers for names and messages.
#include <string>
#include <vector>

namespace tessera::graph::onnx_import {

// Names from the file go into the IR, reports and JSON: bytes that are not UTF-8 are
// written as \xNN (the JSON writer rejects them), valid UTF-8 is kept as it is.
std::string utf8_safe(const std::string& s);
std::string lower(std::string s);
std::string join(const std::vector<std::string>& v, const std::string& sep = ", ");
std::string number_text(double d);  // shortest form that reads back the same: 16000, 0.5, 1e-07

}  // namespace tessera::graph::onnx_import
