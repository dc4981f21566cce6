// What decides between replaying a captured graph with updated nodes and
// capturing a new one (the replay itself runs in GpuGraphDecode).
#include "optimizer/launch_graph.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln {
namespace {

// Distinct addresses standing for loaded kernels; never called.
jit::CudaFunction* FakeFunction(int i) {
  static char functions[4];
  return reinterpret_cast<jit::CudaFunction*>(&functions[i]);
}

std::vector<PreparedLaunch> DecodeLikeLaunches() {
  std::vector<PreparedLaunch> launches(3);
  for (int i = 0; i < 3; ++i) {
    PreparedLaunch& l = launches[i];
    l.function = FakeFunction(i);
    l.config.grid = {static_cast<unsigned>(8 + i), 1, 1};
    l.config.block = {128, 1, 1};
    l.config.dynamic_shared_bytes = 1024u * i;
    l.config.early = i > 0;
    l.params = {0x1000u + i, 0x2000u + i, /*position*/ 17, 0};
  }
  return launches;
}

TEST(LaunchGraph, APositionOrPointerChangeIsANodeUpdateOfThoseLaunchesOnly) {
  const std::vector<PreparedLaunch> a = DecodeLikeLaunches();
  std::vector<PreparedLaunch> b = a;
  EXPECT_TRUE(SameGraphShape(a, b));
  EXPECT_EQ(GraphShapeHash(a), GraphShapeHash(b));
  EXPECT_THAT(ChangedLaunches(a, b), ::testing::IsEmpty());
  b[1].params[2] = 18;        // the next position
  b[2].params[0] = 0x9000;    // a fresh output buffer
  EXPECT_TRUE(SameGraphShape(a, b));
  EXPECT_EQ(GraphShapeHash(a), GraphShapeHash(b));
  EXPECT_THAT(ChangedLaunches(a, b), ::testing::ElementsAre(1, 2));
}

TEST(LaunchGraph, AGridThatGrowsWithTheKeysIsANodeUpdate) {
  const std::vector<PreparedLaunch> a = DecodeLikeLaunches();
  std::vector<PreparedLaunch> b = a;
  b[0].config.grid.x = 9;
  EXPECT_TRUE(SameGraphShape(a, b));
  EXPECT_THAT(ChangedLaunches(a, b), ::testing::ElementsAre(0));
}

TEST(LaunchGraph, WhatANodeUpdateCannotChangeNeedsAnotherGraph) {
  const std::vector<PreparedLaunch> a = DecodeLikeLaunches();
  const auto changed = [&](auto edit) {
    std::vector<PreparedLaunch> b = a;
    edit(b);
    return !SameGraphShape(a, b) && GraphShapeHash(a) != GraphShapeHash(b);
  };
  EXPECT_TRUE(changed([](auto& b) { b.pop_back(); }));
  EXPECT_TRUE(changed([](auto& b) { b[1].function = FakeFunction(3); }));
  EXPECT_TRUE(changed([](auto& b) { b[1].config.block.x = 256; }));
  EXPECT_TRUE(changed([](auto& b) { b[2].config.dynamic_shared_bytes = 4096; }));
  EXPECT_TRUE(changed([](auto& b) { b[0].config.cooperative = true; }));
  EXPECT_TRUE(changed([](auto& b) { b[0].config.early = true; }));
  EXPECT_TRUE(changed([](auto& b) { b[2].config.cluster = {2, 1, 1}; }));
  EXPECT_TRUE(changed([](auto& b) { b[2].params.push_back(0); }));
}

}  // namespace
}  // namespace kiln
