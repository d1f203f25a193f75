// Hostile experiment input (docs/reliability.md, audit classes D3, D5, D9, D17, D20): each
// class is checked with the audit's reproducer and further variants of the same kind.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/expr.h"
#include "sim/sweep/results.h"
#include "sim/sweep/sweep_files.h"

namespace fs = std::filesystem;
using namespace tessera;
using namespace tessera::sweep;

namespace {

const fs::path kSrc = TESSERA_SOURCE_DIR;

Experiment parse(const std::string& body, const std::string& origin = "hostile.yaml") {
  const std::string text =
      "base: configs/tpu-v1.yaml\nworkloads: [workloads/tpu/mlp1.yaml]\nmetrics: [summary.latency_s]\n" + body;
  return parse_experiment(YamlNode::load_string(text, origin), kSrc);
}

std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string expr_error(const std::string& text) {
  try {
    Expr::parse(text).eval([](const std::string&) -> std::optional<Value> { return Value::of_int(3); });
  } catch (const ExprError& e) {
    return e.what();
  }
  return "(no error)";
}

Value eval(const std::string& text) {
  return Expr::parse(text).eval([](const std::string&) -> std::optional<Value> { return std::nullopt; });
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t k = 0; k < n; ++k) out += s;
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// ---------------------------------------------------------------------------------------- D3: nesting depth

// The audit's reproducer: 10 000 nested parentheses in a constraint (a 20 KB file) overflowed
// the stack of the recursive-descent parser (SIGSEGV).
TEST(SweepHostile, TenThousandParenthesesInAConstraintAreAnInputError) {
  const std::string c = repeat("(", 10000) + "1 == 1" + repeat(")", 10000);
  const std::string err = input_error([&] { parse("constraints:\n  - " + c + "\n"); });
  EXPECT_TRUE(has(err, "hostile.yaml:5:5: constraints[0]: constraint: column 258: ")) << err.substr(0, 300);
  EXPECT_TRUE(has(err, "nested more than 256 levels")) << err.substr(0, 300);
}

// Every recursive production: unary minus, not/!, '**' (right-recursive), function calls, and
// long left-associative chains (iterative to parse, but a deep tree to evaluate and free).
TEST(SweepHostile, EveryRecursiveFormIsBounded) {
  for (const std::string& text :
       {repeat("-", 200000) + "1", repeat("not ", 200000) + "true", repeat("!", 200000) + "true",
        repeat("+", 200000) + "1", repeat("- ", 200000) + "1", repeat("2 ** ", 200000) + "1",
        repeat("abs(", 10000) + "1" + repeat(")", 10000), repeat("min(1, ", 10000) + "1" + repeat(")", 10000),
        repeat("if(true, ", 10000) + "1" + repeat(", 2)", 10000), repeat("(-", 10000) + "1" + repeat(")", 10000)}) {
    const std::string err = expr_error(text);
    EXPECT_TRUE(has(err, "nested more than 256 levels")) << text.substr(0, 40) << ": " << err.substr(0, 200);
  }
  for (const std::string& text : {"1" + repeat(" + 1", 200000), "x" + repeat(" * x", 200000),
                                  "true" + repeat(" and true", 200000), "false" + repeat(" or false", 200000),
                                  "1" + repeat(" - 1", 5000)}) {
    const std::string err = expr_error(text);
    EXPECT_TRUE(has(err, "more than 1000 operators")) << text.substr(0, 40) << ": " << err.substr(0, 200);
  }
  // Depth at the limit still works.
  EXPECT_EQ(eval(repeat("(", 200) + "7" + repeat(")", 200)), Value::of_int(7));
  EXPECT_EQ(eval(repeat("-", 200) + "7"), Value::of_int(7));
  EXPECT_EQ(eval("1" + repeat(" + 1", 900)), Value::of_int(901));
}

// The same bound in every place an expression is read: derived templates (both modes) and
// computed metrics, with the file, line and key in the message.
TEST(SweepHostile, DeepExpressionsInDerivedAndMetricsNameTheKey) {
  const std::string deep = repeat("(", 5000) + "1" + repeat(")", 5000);
  std::string err = input_error([&] {
    parse("parameters: {grid: {array.rows: [64]}}\nderived:\n  array.cols: ${" + deep + "}\n");
  });
  EXPECT_TRUE(has(err, "hostile.yaml:6:15: ")) << err.substr(0, 300);
  EXPECT_TRUE(has(err, "nested more than 256 levels")) << err.substr(0, 300);
  // Arithmetic mode around shallow references: the joined expression is too deep; it must not
  // quietly fall back to string interpolation.
  err = input_error([&] {
    parse("parameters: {grid: {array.rows: [64]}}\nderived:\n  array.cols: \"${array.rows}" +
          repeat(" + ${array.rows}", 2000) + "\"\n");
  });
  EXPECT_TRUE(has(err, "more than 1000 operators")) << err.substr(0, 300);
  err = input_error([&] {
    parse_experiment(YamlNode::load_string("base: configs/tpu-v1.yaml\nworkloads: [workloads/tpu/mlp1.yaml]\n"
                                           "metrics:\n  - {name: m, expr: \"" + repeat("-", 100000) + "1\"}\n",
                                           "m.yaml"),
                     kSrc);
  });
  EXPECT_TRUE(has(err, "m.yaml:4:")) << err.substr(0, 300);
  EXPECT_TRUE(has(err, "nested more than 256 levels")) << err.substr(0, 300);
}

// ---------------------------------------------------------------------------------------- D5: int64 arithmetic

// The audit's reproducer: `1 ** 9223372036854775807` looped 2^63 times (base 0, 1 and -1 never
// overflow, so the loop never stopped). Square-and-multiply: 63 steps at most.
TEST(SweepHostile, IntegerPowerIsFastForAnyExponent) {
  EXPECT_EQ(eval("1 ** 9223372036854775807"), Value::of_int(1));
  EXPECT_EQ(eval("0 ** 9223372036854775807"), Value::of_int(0));
  EXPECT_EQ(eval("(-1) ** 9223372036854775807"), Value::of_int(-1));
  EXPECT_EQ(eval("(-1) ** 9223372036854775806"), Value::of_int(1));
  EXPECT_EQ(eval("pow(1, 9223372036854775807)"), Value::of_int(1));
  EXPECT_EQ(eval("2 ** 62"), Value::of_int(int64_t{1} << 62));
  EXPECT_EQ(eval("(-2) ** 63"), Value::of_int(INT64_MIN));
  EXPECT_EQ(eval("3 ** 39"), Value::of_int(4052555153018976267LL));
  EXPECT_EQ(eval("7 ** 0"), Value::of_int(1));
  EXPECT_EQ(eval("0 ** 0"), Value::of_int(1));
  // Through a constraint, as in the audit.
  const Experiment e = parse("constraints: [\"1 ** 9223372036854775807 == 1\"]\n");
  EXPECT_EQ(e.points.size(), 1u);
}

// Integer results that do not fit 64 bits are errors naming the operation, never wrapped
// values, UB or a silent switch to an inexact real.
TEST(SweepHostile, IntegerOverflowIsAnError) {
  for (const char* text : {"2 ** 63", "2 ** 9223372036854775807", "3 ** 40", "(-2) ** 64",
                                  "pow(10, 19)", "9223372036854775807 + 1", "-9223372036854775807 - 2",
                                  "4611686018427387904 * 2", "(-9223372036854775807 - 1) * -1",
                                  "-(-9223372036854775807 - 1)", "abs(-9223372036854775807 - 1)",
                                  "(-9223372036854775807 - 1) / -1", "(-9223372036854775807 - 1) // -1"}) {
    const std::string err = expr_error(text);
    EXPECT_TRUE(has(err, "does not fit a 64-bit integer")) << text << ": " << err;
  }
  // abs() of the most negative integer stayed negative: a constraint abs(x) > 0 pruned silently.
  const std::string err = input_error([] { parse("constraints: [\"abs(-9223372036854775807 - 1) > 0\"]\n"); });
  EXPECT_TRUE(has(err, "hostile.yaml:4:15: constraints[0]: constraint: column 1: abs(-9223372036854775808)")) << err;
  EXPECT_TRUE(has(err, "does not fit a 64-bit integer")) << err;
}

// Division and modulo by -1 are exact (no trap, no detour through doubles), negative exponents
// give reals, zero to a negative power is an error like division by zero.
TEST(SweepHostile, EdgeOperandsHaveDefinedResults) {
  EXPECT_EQ(eval("(-9223372036854775807 - 1) % -1"), Value::of_int(0));
  EXPECT_EQ(eval("9223372036854775807 % -1"), Value::of_int(0));
  EXPECT_EQ(eval("9223372036854775807 / -1"), Value::of_int(-9223372036854775807LL));
  EXPECT_EQ(eval("9223372036854775807 // -1"), Value::of_int(-9223372036854775807LL));
  EXPECT_EQ(eval("7 // -1"), Value::of_int(-7));
  EXPECT_EQ(eval("-7 % -3"), Value::of_int(-1));
  EXPECT_EQ(eval("7 % -3"), Value::of_int(-2));
  EXPECT_EQ(eval("(-9223372036854775807 - 1) // 2"), Value::of_int(INT64_MIN / 2));
  EXPECT_EQ(eval("abs(-9223372036854775807)"), Value::of_int(9223372036854775807LL));
  EXPECT_EQ(eval("2 ** -1"), Value::of_real(0.5));
  EXPECT_EQ(eval("2 ** -2"), Value::of_real(0.25));
  EXPECT_EQ(eval("1 ** -9223372036854775807"), Value::of_real(1.0));
  EXPECT_TRUE(has(expr_error("0 ** -1"), "zero to a negative power")) << expr_error("0 ** -1");
  EXPECT_TRUE(has(expr_error("0.0 ** -1"), "zero to a negative power"));
  EXPECT_TRUE(has(expr_error("(-8) ** 0.5"), "not a real number")) << expr_error("(-8) ** 0.5");
  EXPECT_TRUE(has(expr_error("10.0 ** 400"), "out of the range of a real")) << expr_error("10.0 ** 400");
  EXPECT_EQ(eval("2.0 ** 10"), Value::of_real(1024.0));
  EXPECT_EQ(eval("-2 ** 2"), Value::of_int(-4));  // unary minus binds looser than **
}

// ---------------------------------------------------------------------------------------- D9: non-UTF-8 text

// Every name and value goes into JSON (point ids hash the values dumped as JSON, --list,
// results.jsonl, sweep.json), which throws on invalid UTF-8: exit 1 "internal error". Now
// each is an input error at its place in the file.
TEST(SweepHostile, NonUtf8TextIsAnInputErrorAtItsPlace) {
  std::string err = input_error([] { parse("name: caf\xe9\n"); });
  EXPECT_TRUE(has(err, "hostile.yaml:4:7: not valid UTF-8 (byte 0xe9 at offset 3 of 'caf\\xe9')")) << err;
  err = input_error([] { parse("parameters: {grid: {array.dataflow: [ws, \"o\xffs\"]}}\n"); });
  EXPECT_TRUE(has(err, "hostile.yaml:4:42: not valid UTF-8 (byte 0xff")) << err;
  err = input_error([] { parse("parameters: {grid: {array.rows: [64]}}\nderived: {\"array.c\xc3\x28ls\": 1}\n"); });
  EXPECT_TRUE(has(err, "hostile.yaml:5:11: not valid UTF-8 (byte 0xc3")) << err;
  // Overlong encodings and UTF-16 surrogates are not UTF-8 either (JSON encoders reject them).
  err = input_error([] { parse("description: \"\xc0\xaf\"\n"); });
  EXPECT_TRUE(has(err, "not valid UTF-8 (byte 0xc0")) << err;
  err = input_error([] { parse("description: \"\xed\xa0\x80\"\n"); });
  EXPECT_TRUE(has(err, "not valid UTF-8 (byte 0xed")) << err;
  err = input_error([] { parse("metrics2: 1\n"); });  // (an ordinary error still comes first when the text is valid)
  EXPECT_TRUE(has(err, "unknown key")) << err;
  // Valid multi-byte text is fine, and its point ids are stable.
  const Experiment e = parse("name: café-β\nparameters: {grid: {array.dataflow: [ws]}}\n");
  EXPECT_EQ(e.name, "café-β");
  EXPECT_EQ(e.points.size(), 1u);
}

TEST(SweepHostile, NonUtf8FileNamesNeedAName) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-hostile-utf8-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path exp = dir / "caf\xe9.yaml";
  std::ofstream(exp) << "base: " << (kSrc / "configs/tpu-v1.yaml").string() << "\nworkloads: ["
                     << (kSrc / "workloads/tpu/mlp1.yaml").string() << "]\nmetrics: [summary.latency_s]\n";
  std::string err = input_error([&] { load_experiment(exp); });
  EXPECT_TRUE(has(err, "the experiment's name (the file's name without `name:`) is not valid UTF-8")) << err;
  fs::copy_file(kSrc / "workloads/tpu/mlp1.yaml", dir / "ml\xff.yaml");
  const fs::path exp2 = dir / "named.yaml";
  std::ofstream(exp2) << "name: ok\nbase: " << (kSrc / "configs/tpu-v1.yaml").string()
                      << "\nworkloads: [{path: ml\xff.yaml}]\nmetrics: [summary.latency_s]\n";
  err = input_error([&] { load_experiment(exp2); });
  // (The path is text of the file, so the document check names it first.)
  EXPECT_TRUE(has(err, "named.yaml:3:20: not valid UTF-8 (byte 0xff at offset 2 of 'ml\\xff.yaml')")) << err;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------- D20: other users' files

// `out:` in an experiment file sent the results anywhere; now only below the working directory
// (the command line's --out may still name any place).
TEST(SweepHostile, ExperimentOutMustStayBelowTheWorkingDirectory) {
  for (const char* bad : {"/tmp/elsewhere", "../elsewhere", "out/../../elsewhere", "out/..", ".."}) {
    const std::string err = input_error([&] { parse(std::string("out: \"") + bad + "\"\n"); });
    EXPECT_TRUE(has(err, "hostile.yaml:4:6: out: '")) << bad << ": " << err;
    EXPECT_TRUE(has(err, "pass --out for any other place")) << err;
  }
  EXPECT_EQ(parse("out: out/sweeps/mine\n").out, "out/sweeps/mine");
  EXPECT_EQ(parse("out: ./x..y\n").out, "./x..y");
}

// A `precision:` value that is a path is read as a policy by tessera run, whose error quotes
// its first line into results.jsonl (root's /etc/shadow entry). Policy files must lie inside
// the experiment's directory, by any route: '..', an absolute path, a symbolic link.
TEST(SweepHostile, PrecisionPolicyFilesMustLieInsideTheExperimentDirectory) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-hostile-policy-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "policies");
  std::ofstream(dir / "policies/ok.yaml") << "name: ok\ndefault: int16\n";
  fs::create_symlink("/etc/passwd", dir / "policies/link.yaml");
  auto load = [&](const std::string& values) {
    return parse_experiment(
        YamlNode::load_string("base: " + (kSrc / "configs/tpu-v1.yaml").string() + "\nworkloads: [" +
                                  (kSrc / "workloads/tpu/mlp1.yaml").string() +
                                  "]\nmetrics: [summary.latency_s]\nparameters: {grid: {precision: [" + values + "]}}\n",
                              "p.yaml"),
        dir);
  };
  for (const std::string& bad : {std::string("../../../../../../../etc/shadow"), std::string("/etc/passwd"),
                                 std::string("policies/../../outside.yaml"), std::string("policies/link.yaml")}) {
    const std::string err = input_error([&] { load("int8, \"" + bad + "\""); });
    EXPECT_TRUE(has(err, "p.yaml:4:")) << bad << ": " << err;
    EXPECT_TRUE(has(err, "precision: '" + bad + "' names a policy file outside the experiment's directory")) << err;
  }
  // Derived values are checked too.
  const std::string err = input_error([&] {
    parse_experiment(YamlNode::load_string("base: " + (kSrc / "configs/tpu-v1.yaml").string() + "\nworkloads: [" +
                                               (kSrc / "workloads/tpu/mlp1.yaml").string() +
                                               "]\nmetrics: [summary.latency_s]\nderived: {precision: "
                                               "\"${'../../etc/' + 'shadow'}\"}\n",
                                           "d.yaml"),
                     dir);
  });
  EXPECT_TRUE(has(err, "names a policy file outside")) << err;
  const Experiment e = load("int8, policies/ok.yaml, \"./policies/ok.yaml\"");
  EXPECT_EQ(e.points.size(), 3u);
  fs::remove_all(dir);
}

// Found by fuzz_experiment: `base: ../c((((...` (a component of 4,000 characters) made
// std::filesystem throw "File name too long" out of the loader (exit 1, internal error).
// Every path key of an experiment file is examined without exceptions: a path the system
// cannot examine (a component over NAME_MAX, a loop of links) is that key's error.
TEST(SweepHostile, PathsTheSystemCannotExamineAreTheKeysError) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-hostile-paths-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "policies");
  fs::create_symlink(dir / "loop-b", dir / "loop-a");
  fs::create_symlink(dir / "loop-a", dir / "loop-b");
  const std::string too_long = repeat("c", 4000);
  const std::string cfg = (kSrc / "configs/tpu-v1.yaml").string(), wl = (kSrc / "workloads/tpu/mlp1.yaml").string();
  auto load = [&](const std::string& base, const std::string& workload, const std::string& extra) {
    return input_error([&] {
      parse_experiment(YamlNode::load_string("base: " + base + "\nworkloads: [" + workload +
                                                 "]\nmetrics: [summary.latency_s]\n" + extra,
                                             "paths.yaml"),
                       dir);
    });
  };
  struct Case {
    std::string name, base, workload, extra, location;
  };
  const std::vector<Case> cases = {
      {"long base", "../" + too_long + ".yaml", wl, "", "paths.yaml:1:7"},
      {"long base below a directory", "sub/" + too_long + "/x.yaml", wl, "", "paths.yaml:1:7"},
      {"long workload", cfg, too_long + ".yaml", "", "paths.yaml:2:13"},
      {"workload through a loop of links", cfg, "loop-a/x.yaml", "", "paths.yaml:2:13"},
      {"base a loop of links", "loop-a", wl, "", "paths.yaml:1:7"},
      {"long policy file", cfg, wl, "parameters: {grid: {precision: [int8, \"policies/" + too_long + ".yaml\"]}}\n",
       "paths.yaml:"},
  };
  for (const Case& c : cases) {
    const std::string err = load(c.base, c.workload, c.extra);
    EXPECT_TRUE(has(err, c.location)) << c.name << ": " << err.substr(0, 300);
    EXPECT_TRUE(has(err, "cannot resolve the path") || has(err, "cannot examine the path") ||
                has(err, "no such config file") || has(err, "no such workload file"))
        << c.name << ": " << err.substr(0, 300);
    EXPECT_FALSE(has(err, "(no error)")) << c.name;
  }
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------- D21: environment failures

// A point that failed because its machine did (disk full, out of memory, killed from outside)
// was a permanent failed row: --resume skipped it. Now --resume runs it again; failures of the
// point itself (an input error, a crash of the simulator, the per-point timeout) stay.
TEST(SweepHostile, ResumeRetriesEnvironmentFailuresOnly) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"killed by signal 9 (Killed)", true},
      {"killed by signal 15 (Terminated)", true},
      {"killed by signal 24 (CPU time limit exceeded)", true},
      {"killed by signal 25 (File size limit exceeded)", true},
      {"exit 2: tessera: error: points/x/report.json: cannot write output file: No space left on device", true},
      {"exit 2: tessera: error: points/x/report.json: cannot write output file: Disk quota exceeded\n", true},
      {"exit 2: tessera: error: points/x/report.json: cannot write output file: File too large", true},
      {"exit 1: tessera: internal error: std::bad_alloc", true},
      {"exit 2: tessera: error: points/x/config.yaml: cannot open file: Input/output error", true},
      {"cannot prepare the point: points/x/config.yaml: cannot write output file: No space left on device", true},
      {"cannot fork: Resource temporarily unavailable", true},
      {std::string(kRankTimeoutPrefix) + "2 within 60 s (--rank-timeout): ...", true},
      {"killed by signal 11 (Segmentation fault)", false},
      {"killed by signal 6 (Aborted)", false},
      {"killed by signal 8 (Floating point exception)", false},
      {"timed out after 5 s (the per-point timeout)", false},
      {"exit 2: tessera: error: points/x/config.yaml:8:13: array.dataflow: 'diagonal' is not one of: ws, os, is", false},
      {"exit 2: tessera: error: a name ending in No space left on device is still an input error here", false},
      {"metric 'summary.latncy_s': report.json has no 'summary.latncy_s'", false},
  };
  for (const auto& [text, transient] : cases) EXPECT_EQ(is_environment_failure(text), transient) << text;

  std::string grid = "parameters:\n  grid: {clock_mhz: [";
  for (size_t k = 0; k < cases.size(); ++k) grid += (k ? ", " : "") + std::to_string(500 + k);
  const Experiment e = parse(grid + "]}\n");
  ASSERT_EQ(e.points.size(), cases.size());
  const fs::path dir = fs::temp_directory_path() / ("tessera-hostile-env-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    ResultStore store(e, dir, false, false);
    for (size_t k = 0; k < cases.size(); ++k) store.append(failed_row(e, e.points[k], cases[k].first));
  }
  size_t transient = 0;
  {
    ResultStore store(e, dir, true, false);
    for (size_t k = 0; k < cases.size(); ++k) {
      EXPECT_EQ(store.done().count(e.points[k].id), cases[k].second ? 0u : 1u) << cases[k].first;
      transient += cases[k].second;
    }
    EXPECT_EQ(store.retried_environment(), transient);
  }
  // A fresh store (no --resume) still refuses the directory: the rows are there.
  EXPECT_TRUE(has(input_error([&] { ResultStore s(e, dir, false, false); }), "--resume"));
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------- D7, D18: output files

TEST(SweepHostile, TemporaryNamesAreRecognised) {
  EXPECT_TRUE(is_temporary_name("report.json.tmp.a1B2c3"));
  EXPECT_TRUE(is_temporary_name("results.jsonl.tmp.XXXXXX"));
  EXPECT_FALSE(is_temporary_name("report.json"));
  EXPECT_FALSE(is_temporary_name("notes.tmp.txt"));
  EXPECT_FALSE(is_temporary_name(".tmp.abcdef"));
  EXPECT_FALSE(is_temporary_name("x.tmp.abcdefg"));
}

// replace_file never writes through a link: the link is replaced, its target untouched; the
// appending and reading opens refuse links.
TEST(SweepHostile, OutputFilesNeverFollowLinks) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-hostile-links-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  std::ofstream(dir / "victim") << "precious\n";
  fs::create_symlink(dir / "victim", dir / "out/config.yaml");
  replace_file(dir / "out/config.yaml", "new\n");
  EXPECT_FALSE(fs::is_symlink(dir / "out/config.yaml"));
  std::ifstream v(dir / "victim");
  std::string line;
  std::getline(v, line);
  EXPECT_EQ(line, "precious");
  fs::create_symlink(dir / "victim", dir / "out/sweep.log");
  EXPECT_TRUE(has(input_error([&] { open_no_follow(dir / "out/sweep.log", O_WRONLY | O_APPEND | O_CREAT, "x"); }),
                  "is a symbolic link"));
  EXPECT_TRUE(has(input_error([&] { read_no_follow(dir / "out/sweep.log"); }), "is a symbolic link"));
  fs::create_directories(dir / "elsewhere");
  fs::create_symlink(dir / "elsewhere", dir / "out/points");
  EXPECT_TRUE(has(input_error([&] { make_real_dir(dir / "out/points"); }), "is a symbolic link"));
  // No temporary file is left next to the target by any of this.
  for (const auto& ent : fs::directory_iterator(dir / "out")) EXPECT_FALSE(is_temporary_name(ent.path().filename()));
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------- D17: size of a sweep

// 5 M candidates were allowed at ~1 KB per kept point (4.66 GB for `--list` of a 4.9 M grid).
// Kept points are now bounded (1 M by default), refused before expansion when no constraint
// can prune them, else as soon as the bound is passed.
TEST(SweepHostile, DesignPointsAreBounded) {
  auto seq = [](int n) {
    std::string s;
    for (int k = 1; k <= n; ++k) s += (k > 1 ? "," : "") + std::to_string(k);
    return s;
  };
  // The audit's grid shape (700 x 700 x 10 = 4.9 M): refused at once.
  std::string err = input_error([&] {
    parse("parameters:\n  grid:\n    array.rows: [" + seq(700) + "]\n    array.cols: [" + seq(700) +
          "]\n    weight_fifo.depth_tiles: [1,2,3,4,5,6,7,8,9,10]\n");
  });
  EXPECT_TRUE(has(err, "hostile.yaml:1:1: the experiment has 4900000 design points (no constraints prune them); "
                       "at most 1000000"))
      << err;
  // Batches multiply: 1000 x 500 x 3 batches.
  err = input_error([&] {
    parse_experiment(YamlNode::load_string("base: configs/tpu-v1.yaml\nworkloads: [{path: workloads/tpu/mlp1.yaml, "
                                           "batch: [1, 2, 4]}]\nmetrics: [summary.latency_s]\nparameters:\n  grid:\n"
                                           "    array.rows: [" + seq(1000) + "]\n    array.cols: [" + seq(500) + "]\n",
                                           "b.yaml"),
                     kSrc);
  });
  EXPECT_TRUE(has(err, "1500000 design points")) << err;
  // With constraints the bound applies to the points that pass them (a lowered bound here).
  LoadOptions small;
  small.max_points = 100;
  auto load = [&](const std::string& constraint) {
    return parse_experiment(YamlNode::load_string("base: configs/tpu-v1.yaml\nworkloads: [workloads/tpu/mlp1.yaml]\n"
                                                  "metrics: [summary.latency_s]\nparameters:\n  grid:\n    array.rows: [" +
                                                      seq(30) + "]\n    array.cols: [" + seq(30) +
                                                      "]\nconstraints: [\"" + constraint + "\"]\n",
                                                  "c.yaml"),
                            kSrc, small);
  };
  err = input_error([&] { load("array.rows <= 4"); });  // 120 points pass
  EXPECT_TRUE(has(err, "more than 100 design points after constraints; at most 100")) << err;
  EXPECT_EQ(load("array.rows <= 3").points.size(), 90u);
  // Without constraints, exactly at the bound is fine.
  small.max_points = 900;
  EXPECT_EQ(parse_experiment(YamlNode::load_string("base: configs/tpu-v1.yaml\nworkloads: [workloads/tpu/mlp1.yaml]\n"
                                                   "metrics: [summary.latency_s]\nparameters:\n  grid:\n    array.rows: [" +
                                                       seq(30) + "]\n    array.cols: [" + seq(30) + "]\n",
                                                   "d.yaml"),
                             kSrc, small)
                .points.size(),
            900u);
}

// ---------------------------------------------------------------------------------------- D3: recursion over keys

// A dotted key is set and emitted one component at a time (recursively): a parameter key of
// 100 000 components (an explicit YAML key, `? a.a.a...`) overflowed the stack (SIGSEGV).
TEST(SweepHostile, DottedKeysAreBounded) {
  const std::string huge = "a" + repeat(".a", 99999);
  std::string err = input_error([&] { parse("parameters:\n  grid:\n    ? " + huge + "\n    : [1]\n"); });
  EXPECT_TRUE(has(err, "hostile.yaml:7:7: parameters.grid.a.a.a")) << err.substr(0, 300);
  EXPECT_TRUE(has(err, "(199999 characters, 100000 components) is not a key: keys have at most 16 components and 256 "
                       "characters"))
      << err.substr(0, 300);
  EXPECT_TRUE(has(err, ": 'a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a....' (199999")) << err.substr(0, 300);  // shown cut
  err = input_error([&] { parse("derived:\n  ? array" + repeat(".x", 40) + "\n  : 1\n"); });
  EXPECT_TRUE(has(err, "41 components) is not a key")) << err.substr(0, 300);
  err = input_error([] {
    parse_experiment(YamlNode::load_string("base: configs/tpu-v1.yaml\nworkloads: [workloads/tpu/mlp1.yaml]\n"
                                           "metrics: [summary" + repeat(".x", 300) + "]\n",
                                           "m.yaml"),
                     kSrc);
  });
  EXPECT_TRUE(has(err, "m.yaml:3:11: ")) << err.substr(0, 300);
  EXPECT_TRUE(has(err, "301 components) is not a key")) << err.substr(0, 300);
  // Long but sane keys still work: an ONNX input name with dots.
  EXPECT_EQ(parse("parameters: {grid: {array.rows: [64]}}\n").points.size(), 1u);
}
