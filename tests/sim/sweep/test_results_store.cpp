// Results at sweep scale (issue 35): rows synced in groups, a Pareto front of 100,000 rows.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "sim/common/yaml_reader.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/results.h"
#include "sim/sweep/summary.h"
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
