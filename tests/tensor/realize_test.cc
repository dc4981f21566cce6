// RealizeAll and Tensor::realize: symbol checks, devices, executors.
#include <memory>
#include <string>
#include <vector>

#include "ops/cpu/cpu_executor.h"
#include "ops/ops.h"
#include "tensor/executor.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::ElementsAre;
using testing::F32;
using ::testing::HasSubstr;
using testing::I32;
using testing::Message;
using testing::ReadF32;
using testing::ValueOrFail;

// Installs an executor for one device type for the scope, then puts back
// whatever was there (possibly none).
class ScopedExecutor {
 public:
  ScopedExecutor(DeviceType type, std::shared_ptr<Executor> executor)
      : type_(type), previous_(FindExecutor(type)) {
    RegisterExecutor(type, std::move(executor));
  }
  ~ScopedExecutor() { RegisterExecutor(type_, previous_); }
  ScopedExecutor(const ScopedExecutor&) = delete;
  ScopedExecutor& operator=(const ScopedExecutor&) = delete;

 private:
  DeviceType type_;
  std::shared_ptr<Executor> previous_;
};

// Runs traces on the CPU reference (whatever device they name) and records
// what it was asked to do.
class RecordingExecutor : public Executor {
 public:
  absl::StatusOr<std::vector<TensorData>> Run(const Trace& trace,
                                              const Bindings& bindings) override {
    ++runs;
    node_counts.push_back(static_cast<int>(trace.nodes().size()));
    output_counts.push_back(static_cast<int>(trace.outputs().size()));
    last_ops.clear();
    for (const Node* node : trace.nodes()) last_ops.push_back(node->op);
    if (!fail_with.ok()) return fail_with;
    absl::StatusOr<std::vector<TensorData>> out = cpu_.Run(trace, bindings);
    if (out.ok() && drop_last_output && !out->empty()) out->pop_back();
    return out;
  }
  absl::Status CopyToHost(const TensorData& data, DType dtype, void* dst) override {
    ++copies;
    return cpu_.CopyToHost(data, dtype, dst);
  }
  absl::StatusOr<TensorData> CopyFromHost(const TensorData& host, DType dtype) override {
    ++uploads;
    return cpu_.CopyFromHost(host, dtype);
  }

  int CountOp(OpKind op) const {
    int n = 0;
    for (OpKind k : last_ops) n += k == op;
    return n;
  }

  int runs = 0;
  int copies = 0;
  int uploads = 0;
  std::vector<int> node_counts;
  std::vector<int> output_counts;
  std::vector<OpKind> last_ops;  // of the last trace run (its nodes may be gone)
  absl::Status fail_with;
  bool drop_last_output = false;

 private:
  cpu::CpuExecutor cpu_;
};

// A fake CUDA device backed by the CPU reference, for counting runs.
struct FakeCuda {
  FakeCuda()
      : executor(std::make_shared<RecordingExecutor>()), scope(DeviceType::kCuda, executor) {}
  std::shared_ptr<RecordingExecutor> executor;
  ScopedExecutor scope;
};

Tensor CudaRamp(int64_t n) { return iota(n, 0, 1, DType::kF32, Device::Cuda()); }

// A realized leaf whose storage says it is on the CUDA device (it is host
// memory, so the fake executor's copy can read it).
Tensor CudaLeaf(std::vector<float> values) {
  auto owner = std::make_shared<std::vector<float>>(std::move(values));
  const int64_t n = static_cast<int64_t>(owner->size());
  auto node = std::make_shared<Node>();
  node->op = OpKind::kLeaf;
  node->dtype = DType::kF32;
  node->shape = Shape({n});
  node->device = Device::Cuda();
  node->data.storage = std::make_shared<Storage>(
      Device::Cuda(), owner->data(), owner->size() * sizeof(float), true, [owner](void*) {});
  node->data.sizes = {n};
  node->data.strides = {1};
  return Tensor(std::move(node));
}

// ---- Symbols

TEST(Realize, UnboundSymbolIsFailedPreconditionNamingIt) {
  const Symbol pos("unbound_pos", 16);
  const Tensor t = zeros({Dim(pos) + 1});
  ASSERT_TRUE(t.ok()) << t.status();
  absl::Status s = t.realize();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Message(s), HasSubstr("unbound_pos"));
  EXPECT_EQ(t.to_host<float>().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.item<float>().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(t.is_realized());
}

TEST(Realize, UnboundSymbolInAnAttributeIsFailedPrecondition) {
  // The shape is concrete; only iota's start is symbolic.
  const Symbol start("unbound_start", 16);
  const Tensor t = iota(4, Dim(start), 1, DType::kI32);
  ASSERT_TRUE(t.ok()) << t.status();
  absl::Status s = t.realize();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Message(s), HasSubstr("unbound_start"));
  KILN_EXPECT_OK(t.realize(Bindings{{start, 10}}));
  EXPECT_THAT(ValueOrFail(t.to_host<int32_t>()), ElementsAre(10, 11, 12, 13));
}

TEST(Realize, BindingWithAnotherBoundDoesNotCount) {
  const Tensor t = zeros({Dim(Symbol("other_bound", 10))});
  const absl::Status s = t.realize(Bindings{{Symbol("other_bound", 20), 5}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

TEST(Realize, BoundOutsideRangeIsOutOfRange) {
  const Symbol pos("range_pos", 16);
  const Tensor t = zeros({Dim(pos) + 1});
  absl::Status s = t.realize(Bindings{{pos, 17}});
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_THAT(Message(s), HasSubstr("range_pos"));
  s = t.realize(Bindings{{pos, -1}});
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_FALSE(t.is_realized());
  // A failed realize leaves the tensor usable.
  KILN_EXPECT_OK(t.realize(Bindings{{pos, 16}}));
  EXPECT_TRUE(t.shape() == Shape({17}));
}

TEST(Realize, BoundsAreInclusive) {
  const Symbol pos("edge_pos", 5);
  const Tensor lo = full({Dim(pos) + 1}, 2.0);
  const Tensor hi = full({Dim(pos) + 1}, 2.0);
  KILN_EXPECT_OK(lo.realize(Bindings{{pos, 0}}));
  KILN_EXPECT_OK(hi.realize(Bindings{{pos, 5}}));
  EXPECT_THAT(ReadF32(lo), ElementsAre(2));
  EXPECT_EQ(ReadF32(hi).size(), 6u);
}

TEST(Realize, SameNameWithTwoBoundsIsInvalidArgument) {
  const Symbol small("dup_name", 4), big("dup_name", 8);
  const Tensor a = zeros({Dim(small)});
  const Tensor b = zeros({Dim(big)});
  const Bindings bindings{{small, 1}, {big, 2}};
  absl::Status s = RealizeAll({a, b}, bindings);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(Message(s), HasSubstr("dup_name"));
  const Tensor joined = concat({a, b}, 0);
  if (joined.ok()) {
    s = joined.realize(bindings);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  // Each alone is fine.
  KILN_EXPECT_OK(a.realize(bindings));
  KILN_EXPECT_OK(b.realize(bindings));
}

TEST(Realize, ExtraBindingsAreIgnored) {
  const Symbol unused("unused_sym", 3);
  const Tensor t = F32({1, 2}, {2}) + 1.0;
  KILN_EXPECT_OK(t.realize(Bindings{{unused, 1}}));
  EXPECT_THAT(ReadF32(t), ElementsAre(2, 3));
}

TEST(Realize, SymbolicResultsFollowTheBoundValue) {
  const Symbol pos("follow_pos", 16);
  const Tensor a = iota(Dim(pos) + 1, 0, 1, DType::kI32);
  const Tensor b = iota(Dim(pos) + 1, 0, 1, DType::kI32);
  EXPECT_THAT(ValueOrFail(a.to_host<int32_t>(Bindings{{pos, 3}})), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(ValueOrFail(b.to_host<int32_t>(Bindings{{pos, 7}})).size(), 8u);
  EXPECT_TRUE(a.shape() == Shape({4}));
  EXPECT_TRUE(b.shape() == Shape({8}));
}

// ---- Devices

TEST(Realize, CudaWithoutExecutorIsUnavailable) {
  if (FindExecutor(DeviceType::kCuda) != nullptr) {
    GTEST_SKIP() << "a CUDA executor is registered in this process";
  }
  const Tensor t = zeros({2}, DType::kF32, Device::Cuda());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t.device(), Device::Cuda());
  absl::Status s = t.realize();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(Message(s), HasSubstr("cuda"));
  EXPECT_EQ(t.to_host<float>().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((t + 1.0).realize().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(t.is_realized());
}

TEST(Realize, MixingDevicesInOneOpIsInvalidArgument) {
  const Tensor cpu = F32({1, 2}, {2});
  const Tensor gpu = zeros({2}, DType::kF32, Device::Cuda());
  const Tensor sum_ab = add(cpu, gpu);
  EXPECT_EQ(sum_ab.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(sum_ab.status()), HasSubstr("add"));
  EXPECT_EQ(add(gpu, cpu).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mul(gpu, cpu).status().code(), absl::StatusCode::kInvalidArgument);
  const Tensor joined = concat({cpu, gpu}, 0);
  EXPECT_EQ(joined.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(joined.status()), HasSubstr("concat"));
  const Tensor m = matmul(reshape(cpu, {1, 2}), reshape(gpu, {2, 1}));
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sum_ab.realize().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Realize, RealizeAllAcrossDevicesIsInvalidArgument) {
  FakeCuda cuda;
  const Tensor cpu = F32({1, 2}, {2}) + 1.0;
  const Tensor gpu = CudaRamp(2) + 1.0;
  const absl::Status s = RealizeAll({cpu, gpu});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_FALSE(cpu.is_realized());
  EXPECT_FALSE(gpu.is_realized());
  EXPECT_EQ(cuda.executor->runs, 0);
  // One device at a time works.
  KILN_EXPECT_OK(cpu.realize());
  KILN_EXPECT_OK(gpu.realize());
  EXPECT_THAT(ReadF32(gpu), ElementsAre(1, 2));
}

TEST(Realize, RunsOnTheExecutorOfTheTensorsDevice) {
  FakeCuda cuda;
  const Tensor t = CudaRamp(3) * 2.0;
  EXPECT_THAT(ReadF32(t), ElementsAre(0, 2, 4));
  EXPECT_EQ(cuda.executor->runs, 1);
  KILN_EXPECT_OK((F32({1}, {1}) + 1.0).realize());  // CPU work does not reach it
  EXPECT_EQ(cuda.executor->runs, 1);
}

TEST(Realize, ReadingDeviceMemoryGoesThroughItsExecutor) {
  {
    FakeCuda cuda;
    const Tensor t = CudaLeaf({1, 2, 3});
    EXPECT_TRUE(t.is_realized());
    EXPECT_THAT(ReadF32(t), ElementsAre(1, 2, 3));
    EXPECT_EQ(cuda.executor->copies, 1);
    EXPECT_EQ(cuda.executor->runs, 0);
    // Leaves on the device feed traces there.
    EXPECT_THAT(ReadF32(t * 2.0), ElementsAre(2, 4, 6));
    EXPECT_EQ(cuda.executor->runs, 1);
  }
  if (FindExecutor(DeviceType::kCuda) == nullptr) {
    const Tensor t = CudaLeaf({1});
    EXPECT_EQ(t.to_host<float>().status().code(), absl::StatusCode::kUnavailable);
  }
}

// ---- RealizeAll and idempotence

TEST(Realize, RealizeAllSharesWork) {
  FakeCuda cuda;
  const Tensor a = CudaRamp(4);
  const Tensor s = a * a;
  const Tensor u = s + 1.0;
  const Tensor v = s * 2.0;
  KILN_EXPECT_OK(RealizeAll({u, v}));
  EXPECT_EQ(cuda.executor->runs, 1);
  EXPECT_EQ(cuda.executor->output_counts.back(), 2);
  EXPECT_EQ(cuda.executor->CountOp(OpKind::kMul), 2);  // s and v, s once
  EXPECT_EQ(cuda.executor->CountOp(OpKind::kAdd), 1);
  EXPECT_EQ(cuda.executor->CountOp(OpKind::kIota), 1);
  EXPECT_TRUE(u.is_realized());
  EXPECT_TRUE(v.is_realized());
  EXPECT_THAT(ReadF32(u), ElementsAre(1, 2, 5, 10));
  EXPECT_THAT(ReadF32(v), ElementsAre(0, 2, 8, 18));
  EXPECT_EQ(cuda.executor->runs, 1);  // reading realized tensors runs nothing

  // Realized outputs are leaves of the next trace.
  const Tensor w = u + v;
  EXPECT_THAT(ReadF32(w), ElementsAre(1, 4, 13, 28));
  EXPECT_EQ(cuda.executor->runs, 2);
  EXPECT_EQ(cuda.executor->node_counts.back(), 3);  // u, v, add
}

TEST(Realize, RealizeAllWithAnOutputThatFeedsAnother) {
  const Tensor a = F32({1, 2, 3}, {3});
  const Tensor s = a * a;
  const Tensor u = s + 1.0;
  KILN_EXPECT_OK(RealizeAll({s, u}));
  EXPECT_TRUE(s.is_realized());
  EXPECT_TRUE(u.is_realized());
  EXPECT_THAT(ReadF32(s), ElementsAre(1, 4, 9));
  EXPECT_THAT(ReadF32(u), ElementsAre(2, 5, 10));
}

TEST(Realize, RealizeAllWithDuplicates) {
  FakeCuda cuda;
  const Tensor u = CudaRamp(2) + 1.0;
  KILN_EXPECT_OK(RealizeAll({u, u, u}));
  EXPECT_EQ(cuda.executor->runs, 1);
  EXPECT_EQ(cuda.executor->output_counts.back(), 1);
  EXPECT_THAT(ReadF32(u), ElementsAre(1, 2));
}

TEST(Realize, RealizeAllOfNothingOrOfRealizedTensorsRunsNothing) {
  FakeCuda cuda;
  KILN_EXPECT_OK(RealizeAll({}));
  const Tensor u = CudaRamp(2) + 1.0;
  KILN_EXPECT_OK(u.realize());
  EXPECT_EQ(cuda.executor->runs, 1);
  KILN_EXPECT_OK(RealizeAll({u, u}));
  EXPECT_EQ(cuda.executor->runs, 1);
}

TEST(Realize, RealizingTwiceIsANoOp) {
  FakeCuda cuda;
  const Tensor t = CudaRamp(3) + 1.0;
  KILN_EXPECT_OK(t.realize());
  const void* data = t.node()->data.storage->data();
  KILN_EXPECT_OK(t.realize());
  KILN_EXPECT_OK(t.realize(Bindings{{Symbol("whatever", 3), 1}}));
  EXPECT_EQ(cuda.executor->runs, 1);
  EXPECT_EQ(t.node()->data.storage->data(), data);
  EXPECT_THAT(ReadF32(t), ElementsAre(1, 2, 3));
}

TEST(Realize, RealizingTwiceOnTheCpuKeepsTheValue) {
  const Tensor t = F32({1, 2}, {2}) * 3.0;
  KILN_EXPECT_OK(t.realize());
  const void* data = t.node()->data.storage->data();
  KILN_EXPECT_OK(t.realize());
  EXPECT_EQ(t.node()->data.storage->data(), data);
  EXPECT_THAT(ReadF32(t), ElementsAre(3, 6));
}

TEST(Realize, RealizeAllReturnsTheFirstErrorValue) {
  const Tensor ok = F32({1}, {1}) + 1.0;
  const Tensor bad = F32({1, 2}, {2}) + F32({1, 2, 3}, {3});
  EXPECT_EQ(RealizeAll({ok, bad}), bad.status());
  EXPECT_EQ(RealizeAll({Tensor(), bad}).code(), absl::StatusCode::kFailedPrecondition);
}

// ---- Executor failures

TEST(Realize, ExecutorErrorIsReturnedAndTheTensorStaysLazy) {
  FakeCuda cuda;
  cuda.executor->fail_with = absl::InternalError("device fell over");
  const Tensor t = CudaRamp(2) + 1.0;
  EXPECT_EQ(t.realize(), absl::InternalError("device fell over"));
  EXPECT_FALSE(t.is_realized());
  EXPECT_EQ(t.node()->op, OpKind::kAdd);
  cuda.executor->fail_with = absl::OkStatus();
  KILN_EXPECT_OK(t.realize());
  EXPECT_THAT(ReadF32(t), ElementsAre(1, 2));
}

TEST(Realize, ExecutorReturningTooFewValuesIsInternal) {
  FakeCuda cuda;
  cuda.executor->drop_last_output = true;
  const Tensor u = CudaRamp(2) + 1.0;
  const Tensor v = CudaRamp(2) * 2.0;
  EXPECT_EQ(RealizeAll({u, v}).code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(u.is_realized());
  EXPECT_FALSE(v.is_realized());
}

TEST(Realize, RuntimeErrorLeavesTheTensorUnrealized) {
  const Tensor t = I32({1, 2}, {2}) / I32({1, 0}, {2});
  ASSERT_TRUE(t.ok()) << t.status();
  const absl::Status first = t.realize();
  EXPECT_EQ(first.code(), absl::StatusCode::kInvalidArgument) << first;
  EXPECT_FALSE(t.is_realized());
  EXPECT_EQ(t.realize(), first);  // the same error again, not a stale value
}

}  // namespace
}  // namespace kiln
