// Results at sweep scale (issue 35): rows synced in groups, a Pareto front of 100,000 rows.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <string>
#include <thread>

#include "sim/common/yaml_reader.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/results.h"
#include "sim/sweep/summary.h"
#include "sim/sweep/sweep_files.h"
#include "tests/support/run_cli.h"

namespace fs = std::filesystem;
using namespace tessera;
using namespace tessera::sweep;

namespace {

const fs::path kSrc = TESSERA_SOURCE_DIR;

Experiment sixty_points() {
  return parse_experiment(YamlNode::load_string("base: configs/tpu-v1.yaml\nworkloads: [workloads/tpu/mlp1.yaml]\n"
                                                "metrics: [summary.latency_s]\n"
                                                "parameters: {grid: {clock_mhz: [100, 200, 300, 400, 500, 600], "
                                                "array.rows: [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]}}\n",
                                                "store.yaml"),
                          kSrc);
}

Row ok_row(const Experiment& e, const Point& p, double latency_s) {
  Row r = failed_row(e, p, "");
  r.ok = true;
  r.error.clear();
  r.metrics = {{"summary.latency_s", Value::of_real(latency_s)}};
  return r;
}

}  // namespace

TEST(ResultStoreSync, RowsAreSyncedInGroupsBoundedByTime) {
  const Experiment e = sixty_points();
  ASSERT_EQ(e.points.size(), 60u);
  const fs::path dir = tessera_test::scratch_dir("sweep", "group-sync");
  {
    // An hour between syncs: 30 rows, written (readable at once) but not one fsync yet.
    ResultStore store(e, dir, false, false, 3600);
    for (size_t i = 0; i < 30; ++i) store.append(ok_row(e, e.points[i], 1e-3 * static_cast<double>(i + 1)));
    EXPECT_EQ(store.syncs(), 0u);
    EXPECT_EQ(read_results(dir / "results.jsonl").rows.size(), 30u);
    store.sync();
    EXPECT_EQ(store.syncs(), 1u);
    store.sync();  // nothing new: no fsync
    EXPECT_EQ(store.syncs(), 1u);
  }
  {
    // Every row on its own (interval 0): one fsync per row, as before issue 35.
    ResultStore store(e, dir, true, false, 0);
    EXPECT_EQ(store.done().size(), 30u);
    for (size_t i = 30; i < 40; ++i) store.append(ok_row(e, e.points[i], 1.0));
    EXPECT_EQ(store.syncs(), 10u);
    store.append(ok_row(e, e.points[0], 5.0));  // already done: neither written nor synced
    EXPECT_EQ(store.syncs(), 10u);
  }
  {
    // 50 ms: the rows of a burst share one fsync, and a row waits at most the interval.
    ResultStore store(e, dir, true, false, 0.05);
    for (size_t i = 40; i < 50; ++i) store.append(ok_row(e, e.points[i], 1.0));
    EXPECT_EQ(store.syncs(), 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    store.sync_if_due();
    EXPECT_EQ(store.syncs(), 1u);
  }
  const auto rows = read_results(dir / "results.jsonl");
  EXPECT_EQ(rows.rows.size(), 50u);
  EXPECT_EQ(rows.duplicates, 0u);
  EXPECT_EQ(rows.torn, 0u);
}

TEST(ParetoFront, SameFrontAsEveryPairCompared) {
  // Hand-made: (latency, area) minimised; (3,3) and (2,4) dominated; the two (1,5) both kept.
  const std::vector<std::vector<double>> v = {{1, 5}, {3, 3}, {2, 2}, {4, 1}, {2, 4}, {1, 5}, {5, 5}};
  EXPECT_EQ(pareto_front(v, {true, true}), (std::vector<size_t>{0, 2, 3, 5}));
  // The second axis maximised: (1,5) is best on both; (5,5) ties it on one and loses on the other.
  EXPECT_EQ(pareto_front(v, {true, false}), (std::vector<size_t>{0, 5}));
  // 100,000 points: the old all-pairs loop took minutes here (10^10 comparisons). Each point
  // of the front is checked against a sample of the others.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<double>> cloud;
  for (int i = 0; i < 100000; ++i) cloud.push_back({static_cast<double>(i % 317), static_cast<double>((i * 7919) % 1009)});
  const auto front = pareto_front(cloud, {true, true});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);  // not a timing: a hang guard
  for (size_t i : front) {
    for (size_t j = 0; j < cloud.size(); j += 97) {
      EXPECT_FALSE(cloud[j][0] <= cloud[i][0] && cloud[j][1] <= cloud[i][1] &&
                   (cloud[j][0] < cloud[i][0] || cloud[j][1] < cloud[i][1]));
    }
  }
  EXPECT_FALSE(front.empty());
}

TEST(PointIdSet, HexIdsAsIntegersOtherIdsAsText) {
  PointIdSet ids;
  EXPECT_TRUE(ids.insert("9aeeead9f4c35da1"));
  EXPECT_FALSE(ids.insert("9aeeead9f4c35da1"));
  EXPECT_TRUE(ids.insert("0000000000000000"));  // the integer 0, which marks an empty slot
  EXPECT_FALSE(ids.insert("0000000000000000"));
  // Not 16 lower-case hex digits: kept as text, never confused with the integer they spell.
  EXPECT_TRUE(ids.insert("9AEEEAD9F4C35DA1"));
  EXPECT_TRUE(ids.insert("a1"));
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids.count("9aeeead9f4c35da1"), 1u);
  EXPECT_EQ(ids.count("9AEEEAD9F4C35DA1"), 1u);
  EXPECT_EQ(ids.count("0000000000000000"), 1u);
  EXPECT_EQ(ids.count("a1"), 1u);
  EXPECT_EQ(ids.count("00000000000000a1"), 0u);
  EXPECT_EQ(ids.count("9aeeead9f4c35da2"), 0u);
  // Grows past any reservation: 5,000 ids, each found once, none that was not inserted.
  PointIdSet many;
  many.reserve(10);
  char buf[17];
  for (unsigned k = 1; k <= 5000; ++k) {
    std::snprintf(buf, sizeof buf, "%016x", k * 2654435761u);
    EXPECT_TRUE(many.insert(buf));
  }
  EXPECT_EQ(many.size(), 5000u);
  for (unsigned k = 1; k <= 5000; ++k) {
    std::snprintf(buf, sizeof buf, "%016x", k * 2654435761u);
    EXPECT_EQ(many.count(buf), 1u) << buf;
    std::snprintf(buf, sizeof buf, "%016x", k * 2654435761u + 1);
    EXPECT_EQ(many.count(buf), 0u) << buf;
  }
}

TEST(ResultStoreResume, RowsRewrittenOneAtATimeAsBefore) {
  // A resume streams results.jsonl (64 KiB at a time) into the rewritten files: the same
  // rows, the first of two duplicates, a torn last line dropped, an environment failure
  // dropped to run again, and results.csv rebuilt, as when all rows were read first.
  const Experiment e = sixty_points();
  const fs::path dir = tessera_test::scratch_dir("sweep", "streamed-resume");
  std::string expected_jsonl, expected_csv = csv_header(e);
  {
    ResultStore store(e, dir, false, false, 3600);
    for (size_t i = 0; i < 50; ++i) {
      const Row r = i == 7 ? failed_row(e, e.points[i], "killed by signal 9 (Killed)") : ok_row(e, e.points[i], 0.5 + i);
      store.append(r);
      if (i != 7) {
        expected_jsonl += row_to_jsonl(r);
        expected_csv += row_to_csv(e, r);
      }
    }
  }
  // A second row of point 3 (a duplicate) and half a row (a write killed by kill -9).
  {
    std::ofstream f(dir / "results.jsonl", std::ios::app);
    f << row_to_jsonl(ok_row(e, e.points[3], 99.0)) << "{\"point\":\"" << e.points[50].id << "\",\"ind";
  }
  {
    ResultStore store(e, dir, true, false, 3600);
    EXPECT_EQ(store.done().size(), 49u);
    EXPECT_EQ(store.done().count(e.points[7].id), 0u);  // runs again
    EXPECT_EQ(store.done().count(e.points[50].id), 0u);
    EXPECT_EQ(store.retried_environment(), 1u);
    EXPECT_EQ(store.dropped_torn(), 1u);
  }
  EXPECT_EQ(read_no_follow(dir / "results.jsonl"), expected_jsonl);
  EXPECT_EQ(read_no_follow(dir / "results.csv"), expected_csv);
  for (const auto& entry : fs::directory_iterator(dir)) EXPECT_FALSE(is_temporary_name(entry.path().filename().string()));
}

TEST(LineReader, LinesAcrossBufferBoundaries) {
  const fs::path dir = tessera_test::scratch_dir("sweep", "line-reader");
  // Lines of 1 to 200,000 bytes, so that some straddle the 64 KiB reads; then a torn last line.
  std::string text;
  std::vector<std::string> expected;
  for (size_t n : {1u, 70000u, 0u, 65535u, 3u, 200000u, 17u}) {
    expected.push_back(std::string(n, static_cast<char>('a' + n % 26)));
    text += expected.back() + "\n";
  }
  replace_file(dir / "lines.txt", text + "tail");
  LineReader reader(dir / "lines.txt");
  std::string line;
  bool complete = false;
  for (const auto& want : expected) {
    ASSERT_TRUE(reader.next(line, complete));
    EXPECT_TRUE(complete);
    EXPECT_EQ(line, want);
  }
  ASSERT_TRUE(reader.next(line, complete));
  EXPECT_FALSE(complete);
  EXPECT_EQ(line, "tail");
  EXPECT_FALSE(reader.next(line, complete));
}
