// The uGraph IR: what the default lowering makes of common traces, the
// validator's refusals, JSON round trips and malformed JSON.
#include "ops/ops.h"
#include "ops/quant.h"
#include "optimizer/lower.h"
#include "optimizer/ugraph.h"
#include "optimizer/ugraph_json.h"
#include "optimizer/ugraph_validate.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ugraph::BlockKind;

ugraph::KernelGraph Lower(const std::vector<Tensor>& outputs) {
  absl::StatusOr<Trace> trace = Trace::Collect(outputs);
  EXPECT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<lowering::LoweredTrace> lowered = lowering::LowerTrace(*trace);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_TRUE(ugraph::Validate(lowered->graph).ok()) << ugraph::Validate(lowered->graph);
  return lowered.ok() ? lowered->graph : ugraph::KernelGraph();
}

std::vector<BlockKind> Kinds(const ugraph::KernelGraph& g) {
  std::vector<BlockKind> kinds;
  for (const ugraph::Kernel& k : g.kernels) kinds.push_back(k.block.kind);
  return kinds;
}

Tensor Leaf(std::vector<int64_t> sizes, DType dtype = DType::kF32) {
  Tensor t = cast(random_normal(Shape::FromExtents(sizes), 1), dtype);
  EXPECT_TRUE(t.realize().ok());
  return t;
}

TEST(DefaultLowering, ElementwiseChainIsOneKernel) {
  Tensor x = Leaf({17, 33});
  ugraph::KernelGraph g = Lower({exp(x * 2.0 + 1.0) - sqrt(abs(transpose(transpose(x, 0, 1), 0, 1)))});
  EXPECT_EQ(Kinds(g), std::vector<BlockKind>{BlockKind::kPointwise});
}

TEST(DefaultLowering, RmsNormAndSoftmaxAreOneRowKernelEach) {
  Tensor x = Leaf({5, 64});
  Tensor w = Leaf({64});
  EXPECT_EQ(Kinds(Lower({rms_norm(x, w, 1e-5)})), std::vector<BlockKind>{BlockKind::kRowReduce});
  ugraph::KernelGraph softmax_graph = Lower({softmax(x)});
  ASSERT_EQ(Kinds(softmax_graph), std::vector<BlockKind>{BlockKind::kRowReduce});
  // max, then the sum of exponentials, then the outputs.
  EXPECT_EQ(softmax_graph.kernels[0].block.phases.size(), 3u);
}

TEST(DefaultLowering, MatmulKeepsItsElementwiseConsumersAsAnEpilogue) {
  Tensor a = Leaf({33, 64}), b = Leaf({64, 17}), r = Leaf({33, 17});
  ugraph::KernelGraph g = Lower({relu(matmul(a, b) * 0.5 + r)});
  ASSERT_EQ(Kinds(g), std::vector<BlockKind>{BlockKind::kMatmul});
  // No intermediate is written: the only tensors are the operands and the result.
  EXPECT_EQ(g.tensors.size(), 4u);
}

TEST(DefaultLowering, AttentionIsMatmulSoftmaxMatmul) {
  Tensor q = Leaf({8, 17, 32}, DType::kF16), k = Leaf({2, 17, 32}, DType::kF16),
         v = Leaf({2, 17, 32}, DType::kF16);
  EXPECT_EQ(Kinds(Lower({attention(q, k, v, {.causal = true})})),
            (std::vector<BlockKind>{BlockKind::kMatmul, BlockKind::kRowReduce, BlockKind::kMatmul}));
}

TEST(DefaultLowering, SymbolicDimsStayArguments) {
  const Symbol pos("pos", 63);
  Tensor cache = Leaf({2, 64, 16});
  ugraph::KernelGraph g = Lower({softmax(slice(cache, 1, 0, Dim(pos) + 1), 1)});
  EXPECT_THAT(ugraph::ToText(g), HasSubstr("pos+1"));
}

TEST(DefaultLowering, DecodeMatmulUsesAWarpPerColumn) {
  Tensor x = Leaf({1, 256}, DType::kBF16), w = Leaf({300, 256}, DType::kBF16);
  ugraph::KernelGraph g = Lower({matmul(x, transpose(w, 0, 1))});
  ASSERT_EQ(g.kernels.size(), 1u);
  EXPECT_EQ(g.kernels[0].block.tiles.algorithm, ugraph::MatmulAlgorithm::kWarpDot);
  Tensor prefill = Leaf({64, 256}, DType::kBF16);
  EXPECT_EQ(Lower({matmul(prefill, transpose(w, 0, 1))}).kernels[0].block.tiles.algorithm,
            ugraph::MatmulAlgorithm::kTensorCore);
}

// Q8_0 blocks [rows, values / 32 * 34] with finite scales (1/64).
Tensor Q8Blocks(int64_t rows, int64_t values) {
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * values / 32 * 34));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 % 251);
  for (size_t b = 0; b < bytes.size(); b += 34) {
    bytes[b] = 0x00;
    bytes[b + 1] = 0x24;  // f16 2^-6
  }
  return Tensor::FromHost<uint8_t>(bytes, {rows, static_cast<int64_t>(bytes.size()) / rows});
}

TEST(DefaultLowering, DecodeProductDecodesQuantizedBlocksInItsLoads) {
  Tensor x = Leaf({1, 256}, DType::kBF16);
  Tensor w = dequantize(Q8Blocks(300, 256), QuantFormat::kQ8_0, DType::kBF16);
  ugraph::KernelGraph g = Lower({matmul(x, transpose(w, 0, 1)) * 2.0});
  // One kernel, no unpacked copy of W: the product reads the blocks.
  ASSERT_EQ(g.kernels.size(), 1u);
  const ugraph::BlockGraph& b = g.kernels[0].block;
  EXPECT_EQ(b.tiles.algorithm, ugraph::MatmulAlgorithm::kWarpDot);
  ASSERT_TRUE(b.inputs[1].quant.has_value());
  EXPECT_EQ(b.inputs[1].quant->format, QuantFormat::kQ8_0);
  EXPECT_EQ(b.inputs[1].quant->dtype, DType::kBF16);
  EXPECT_EQ(g.tensors[b.inputs[1].view.tensor].dtype, DType::kU8);
  EXPECT_EQ(b.inputs[1].view.shape, (Shape{256, 300}));
  EXPECT_THAT(ugraph::ToText(g), HasSubstr("decoded from Q8_0 to bf16"));
  const std::string json = ugraph::ToJson(g);
  absl::StatusOr<ugraph::KernelGraph> back = ugraph::FromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ugraph::ToJson(*back), json);
}

// Prefill products of packed weights decode them element by element, on
// the 128-thread tensor-core product (the pipelined one does not decode).
TEST(DefaultLowering, PrefillProductsDecodeQuantizedBlocksElementByElement) {
  Tensor w = dequantize(Q8Blocks(64, 256), QuantFormat::kQ8_0, DType::kBF16);
  for (const int64_t rows : {64, 512}) {
    ugraph::KernelGraph g = Lower({matmul(Leaf({rows, 256}, DType::kBF16), transpose(w, 0, 1))});
    ASSERT_EQ(g.kernels.size(), 1u);
    EXPECT_EQ(g.kernels[0].block.tiles.algorithm, ugraph::MatmulAlgorithm::kTensorCore);
    EXPECT_EQ(g.kernels[0].block.threads, 128);
    EXPECT_TRUE(g.kernels[0].block.inputs[1].quant.has_value());
  }
}

TEST(DefaultLowering, QuantizedBlocksOtherProductsCannotDecodeGetABuffer) {
  Tensor w = dequantize(Q8Blocks(64, 256), QuantFormat::kQ8_0, DType::kBF16);
  // A decode product reading B along its rows, and a weight also read
  // outside a product: each dequantizes W to a buffer first.
  for (const Tensor& y : {matmul(Leaf({1, 64}, DType::kBF16), w),
                          matmul(Leaf({1, 256}, DType::kBF16), transpose(w, 0, 1)) + sum(w)}) {
    ugraph::KernelGraph g = Lower({y});
    ASSERT_GE(g.kernels.size(), 2u);
    for (const ugraph::Kernel& k : g.kernels) {
      for (const ugraph::InputIterator& in : k.block.inputs) EXPECT_FALSE(in.quant.has_value());
    }
  }
}

TEST(UGraphPrinting, TextAndDotNameKernelsAndTensors) {
  Tensor x = Leaf({5, 64});
  ugraph::KernelGraph g = Lower({softmax(x)});
  const std::string text = ugraph::ToText(g);
  EXPECT_THAT(text, HasSubstr("row_reduce"));
  EXPECT_THAT(text, HasSubstr("t0 input f32[5,64]"));
  const std::string dot = ugraph::ToDot(g);
  EXPECT_THAT(dot, HasSubstr("digraph ugraph"));
  EXPECT_THAT(dot, HasSubstr("t0 -> k0"));
}

TEST(UGraphJson, RoundTripsExactly) {
  const Symbol n("n", 100);
  Tensor x = Leaf({100, 8});
  Tensor y = where(gt(slice(x, 0, 0, Dim(n)), zeros({1})), log(abs(slice(x, 0, 0, Dim(n))) + 1e-3),
                   -std::numeric_limits<double>::infinity());
  ugraph::KernelGraph g = Lower({y, sum(y, 1)});
  const std::string json = ugraph::ToJson(g);
  absl::StatusOr<ugraph::KernelGraph> back = ugraph::FromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ugraph::ToJson(*back), json);
  EXPECT_EQ(ugraph::ToText(*back), ugraph::ToText(g));
}

TEST(UGraphJson, MalformedInputIsRejected) {
  Tensor x = Leaf({3, 4});
  const std::string good = ugraph::ToJson(Lower({exp(x)}));
  for (const std::string& bad :
       {std::string("not json"), std::string("[]"), std::string("{}"),
        std::string(R"({"format": "other", "tensors": [], "kernels": []})"),
        std::string(R"({"format": "kiln-ugraph-1", "tensors": [{"id": 0}], "kernels": []})"),
        std::string(R"({"format": "kiln-ugraph-1", "tensors": [{"id": 1.5, "dtype": "f32", "shape": [], "role": 0, "strides": [], "aliases": -1}], "kernels": []})"),
        std::string(R"({"format": "kiln-ugraph-1", "tensors": [{"id": 0, "dtype": "f99", "shape": [], "role": 0, "strides": [], "aliases": -1}], "kernels": []})"),
        std::string(R"({"format": "kiln-ugraph-1", "tensors": [{"id": 0, "dtype": "f32", "shape": [], "role": 7, "strides": [], "aliases": -1}], "kernels": []})"),
        good.substr(0, good.size() / 2)}) {
    absl::StatusOr<ugraph::KernelGraph> g = ugraph::FromJson(bad);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

class UGraphValidate : public ::testing::Test {
 protected:
  void SetUp() override {
    Tensor x = Leaf({5, 64});
    graph_ = Lower({softmax(x) * 2.0});
    ASSERT_EQ(graph_.kernels.size(), 1u);
  }
  void ExpectInvalid(absl::string_view what) {
    absl::Status s = ugraph::Validate(graph_);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(what));
  }
  ugraph::BlockGraph& block() { return graph_.kernels[0].block; }
  ugraph::KernelGraph graph_;
};

TEST_F(UGraphValidate, AcceptsTheLoweredGraph) { KILN_EXPECT_OK(ugraph::Validate(graph_)); }

TEST_F(UGraphValidate, RejectsAnUnwrittenRead) {
  graph_.kernels[0].inputs.push_back(graph_.kernels[0].outputs[0]);
  ExpectInvalid("before anything writes it");
}

TEST_F(UGraphValidate, RejectsATensorWrittenTwice) {
  graph_.kernels.push_back(graph_.kernels[0]);
  ExpectInvalid("written twice");
}

TEST_F(UGraphValidate, RejectsForwardReferencesInAThreadGraph) {
  block().phases[0].graph.ops[0].args = {5};
  block().phases[0].graph.ops[0].kind = ugraph::ScalarOp::Kind::kUnary;
  block().phases[0].graph.ops[0].op = OpKind::kExp;
  ExpectInvalid("before it exists");
}

TEST_F(UGraphValidate, RejectsBadThreadCounts) {
  block().threads = 100;
  ExpectInvalid("multiple of 32");
}

// One grid point a block is a form of tiled kernels' grid-stride loops.
TEST_F(UGraphValidate, RejectsOnePointBlocksOutsideTiledKernels) {
  block().one_point_blocks = true;
  ExpectInvalid("one_point_blocks is for tiled kernels");
}

TEST_F(UGraphValidate, RejectsMoreSharedMemoryThanTheDevice) {
  Tensor a = Leaf({64, 64}), b = Leaf({64, 64});
  ugraph::KernelGraph g = Lower({matmul(a, b)});
  g.kernels[0].block.tiles.m = 1024;
  g.kernels[0].block.tiles.k = 1024;
  absl::Status s = ugraph::Validate(g, ugraph::DeviceLimits{1024, 48 * 1024});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("shared memory"));
}

TEST_F(UGraphValidate, RejectsAViewOfAnotherShape) {
  block().inputs[0].view.shape = Shape{3, 3};
  ExpectInvalid("view shape mismatch");
}

TEST_F(UGraphValidate, RejectsAQuantizedReadOfAFloatTensor) {
  block().inputs[0].quant = ugraph::QuantRead{QuantFormat::kQ8_0, DType::kF32};
  ExpectInvalid("u8 rows of blocks");
}

TEST(UGraphValidateQuant, RejectsDecodedRowsThatAreNotTheBlocks) {
  Tensor w = dequantize(Q8Blocks(8, 64), QuantFormat::kQ8_0, DType::kBF16);
  ugraph::KernelGraph g = Lower({matmul(Leaf({1, 64}, DType::kBF16), transpose(w, 0, 1))});
  ASSERT_EQ(g.kernels.size(), 1u);
  ugraph::InputIterator& in = g.kernels[0].block.inputs[1];
  in.quant->format = QuantFormat::kQ4_0;  // 64 Q4_0 values take 36 bytes, not the row's 68
  absl::Status s = ugraph::Validate(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("bytes of Q4_0 blocks"));
}

TEST_F(UGraphValidate, RejectsAMissingLoadInput) {
  block().phases[0].graph.ops[0].input = 42;
  ExpectInvalid("missing input");
}

TEST_F(UGraphValidate, RejectsSavingIntoAnotherDType) {
  graph_.tensors[block().outputs[0].tensor].dtype = DType::kI32;
  ExpectInvalid("saves a f32 value");
}

TEST_F(UGraphValidate, RejectsARowKernelWithoutAnOutputPhase) {
  block().phases.pop_back();
  ExpectInvalid("output phase");
}

}  // namespace
}  // namespace kiln
