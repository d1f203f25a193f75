// Compiler memory (issue 19): compact instruction records with inline region storage, and
// compile memory linear in the layer count (a 20,000-layer chain within a bound, measured
// by getrusage in forked children so that no other test's memory counts).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::compiler;
using tessera::test_support::TinyArch;

namespace {

isa::Region region(int32_t buffer, int64_t r0) {
  return isa::Region{isa::Space::kUnifiedBuffer, buffer, r0, r0 + 1, 0, 16};
}

std::vector<int32_t> buffers(const isa::RegionList& l) {
  std::vector<int32_t> out;
  for (const isa::Region& r : l) out.push_back(r.buffer);
  return out;
}

TEST(CompileMemory, InstructionRecordIsCompact) {
  // One region inline per list: a record no larger than this, and no heap storage for the
  // usual instruction (one read, one write). Before issue 19: 200 bytes plus two heap
  // blocks (about 350 bytes per instruction).
  EXPECT_LE(sizeof(isa::Instruction), 248u);
  EXPECT_EQ(sizeof(isa::RegionList), sizeof(isa::Region) + 16);
}

TEST(CompileMemory, RegionListBehavesAsAVector) {
  isa::RegionList l;
  EXPECT_TRUE(l.empty());
  l.push_back(region(1, 0));
  EXPECT_EQ(buffers(l), (std::vector<int32_t>{1}));
  for (int i = 2; i <= 5; ++i) l.push_back(region(i, i));  // spills to the heap
  EXPECT_EQ(buffers(l), (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(l.front().buffer, 1);
  EXPECT_EQ(l[4].row_begin, 5);
  const std::vector<isa::Region> more = {region(6, 0), region(7, 0)};
  l.insert(l.end(), more.begin(), more.end());
  EXPECT_EQ(buffers(l), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));

  isa::RegionList copy = l;  // deep copy
  EXPECT_EQ(buffers(copy), buffers(l));
  isa::RegionList moved = std::move(copy);
  EXPECT_EQ(buffers(moved), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty

  isa::RegionList one{region(3, 0)};
  isa::RegionList assigned;
  assigned = one;
  assigned = moved;  // inline -> heap
  EXPECT_EQ(assigned.size(), 7u);
  assigned = one;  // heap -> one region
  EXPECT_EQ(buffers(assigned), (std::vector<int32_t>{3}));
  isa::RegionList inline_moved = std::move(one);
  EXPECT_EQ(buffers(inline_moved), (std::vector<int32_t>{3}));
  EXPECT_THROW(assigned.insert(assigned.begin(), more.begin(), more.end()), std::logic_error);
}

TEST(CompileMemory, SharedTailFollowsOwnRegions) {
  const std::vector<isa::Region> table = {region(12, 0), region(10, 0), region(11, 0)};
  const isa::SharedRegionList shared{&table, {1, 2, 0}};  // 10, 11, 12
  const isa::SharedRegionList last_two{&table, {2, 0}};    // 11, 12
  const isa::SharedRegionList first_two{&table, {1, 2}};   // 10, 11
  const isa::SharedRegionList empty{&table, {}};
  isa::RegionList l{region(1, 0)};
  l.set_shared_tail(&shared);
  EXPECT_EQ(l.size(), 4u);
  EXPECT_EQ(l.shared_size(), 3u);
  EXPECT_EQ(buffers(l), (std::vector<int32_t>{1, 10, 11, 12}));
  EXPECT_EQ(l[0].buffer, 1);
  EXPECT_EQ(l[3].buffer, 12);
  EXPECT_EQ(l.back().buffer, 12);
  EXPECT_THROW(l.push_back(region(2, 0)), std::logic_error);  // own regions come first
  EXPECT_THROW(l.set_shared_tail(&last_two), std::logic_error);

  isa::RegionList two{region(1, 0), region(2, 0)};  // heap own storage and a tail
  two.set_shared_tail(&last_two);
  const isa::RegionList copy = two;
  EXPECT_EQ(buffers(copy), (std::vector<int32_t>{1, 2, 11, 12}));
  isa::RegionList moved = std::move(two);
  EXPECT_EQ(buffers(moved), (std::vector<int32_t>{1, 2, 11, 12}));
  EXPECT_TRUE(two.empty());  // NOLINT(bugprone-use-after-move)

  isa::RegionList only_tail;  // no own regions
  only_tail.set_shared_tail(&first_two);
  EXPECT_EQ(buffers(only_tail), (std::vector<int32_t>{10, 11}));
  EXPECT_EQ(only_tail.front().buffer, 10);
  isa::RegionList none;
  none.set_shared_tail(&empty);  // an empty tail attaches nothing
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(none.begin() == none.end());
}

// x [16] -> r0 -> ... -> r{n-1}, all relu, batch 1 (the D6 chain of docs/reliability.md).
graph::Graph relu_chain(int n) {
  std::string y = "name: chain\nbatch: 1\ninputs: [{name: x, shape: [16]}]\nlayers:\n";
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    y += "  - {name: r" + std::to_string(i) + ", op: relu, input: " + prev + "}\n";
    prev = "r" + std::to_string(i);
  }
  y += "outputs: [" + prev + "]\n";
  return graph::parse_graph_yaml(YamlNode::load_string(y, "chain.yaml"));
}

int64_t peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Peak RSS growth (KiB) of building and compiling an n-layer chain in a fresh child
// process; -1 when the child failed.
int64_t chain_compile_kib(int n) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int64_t grown = -1;
    try {
      const int64_t before = peak_rss_kib();
      const graph::Graph g = relu_chain(n);
      const Program p = compile(g, TinyArch{}.build());
      grown = p.instructions.size() >= static_cast<size_t>(n) ? peak_rss_kib() - before : -1;
    } catch (...) {
    }
    const ssize_t w = write(fds[1], &grown, sizeof grown);
    _exit(w == sizeof grown ? 0 : 1);
  }
  close(fds[1]);
  int64_t grown = -1;
  if (read(fds[0], &grown, sizeof grown) != sizeof grown) grown = -1;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? grown : -1;
}

TEST(CompileMemory, LongChainCompilesInLinearMemory) {
  // Quadratic memory (every instruction carrying the regions of all earlier tensors in
  // the same bytes) cost ~400 kB per layer at 20,000 layers; linear costs a few kB per
  // layer (the YAML text and tree, the graph, two instructions). Bounds are loose on
  // purpose: they separate linear from quadratic, not one allocator from another.
  const int64_t small = chain_compile_kib(2000);
  const int64_t large = chain_compile_kib(20000);
  ASSERT_GE(small, 0);
  ASSERT_GE(large, 0);
  EXPECT_LT(large, 256 * 1024) << "20,000-layer chain: peak RSS grew " << large / 1024 << " MiB";
  EXPECT_LT(large - small, 18000 * 8) << "per-layer growth " << (large - small) / 18000.0 << " KiB";
}

}  // namespace
