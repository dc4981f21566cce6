#include "tensor/trace.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::ElementsAre;
using testing::F32;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::CountSubstr;
using testing::ValueOrFail;

Trace CollectOk(std::initializer_list<Tensor> outputs) {
  std::vector<Tensor> list(outputs);
  absl::StatusOr<Trace> trace = Trace::Collect(list);
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *std::move(trace) : Trace();
}

Hash128 HashOf(std::initializer_list<Tensor> outputs) {
  return CollectOk(outputs).StructuralHash();
}

std::vector<float> Ramp(int n, float start) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

Tensor Leaf(int64_t rows, int64_t cols, float start = 0) {
  return F32(Ramp(static_cast<int>(rows * cols), start), {rows, cols});
}

// A small model, the same code for every hash comparison below.
Tensor Model(const Tensor& a, const Tensor& b) { return sum(relu(matmul(a, b) + 1.0) * 2.0, 1); }

// A realized f32 leaf whose data is laid out with `strides` (in elements).
Tensor StridedLeaf(Extents sizes, Extents strides) {
  absl::StatusOr<TensorData> data = AllocateHostTensor(DType::kF32, sizes);
  EXPECT_TRUE(data.ok());
  auto node = std::make_shared<Node>();
  node->op = OpKind::kLeaf;
  node->dtype = DType::kF32;
  node->shape = Shape::FromExtents(sizes);
  node->device = Device::Cpu();
  node->data = *data;
  node->data.strides = std::move(strides);
  return Tensor(std::move(node));
}

// ---- Collect

TEST(Trace, CollectPutsInputsBeforeUsers) {
  const Tensor a = Leaf(2, 3), b = Leaf(2, 3, 10);
  const Tensor c = a + b;
  const Tensor d = exp(c) * a;
  const Trace trace = CollectOk({d});
  ASSERT_EQ(trace.outputs().size(), 1u);
  EXPECT_EQ(trace.outputs()[0], d.node().get());
  for (size_t i = 0; i < trace.nodes().size(); ++i) {
    const Node* node = trace.nodes()[i];
    EXPECT_EQ(trace.IndexOf(node), static_cast<int>(i));
    for (const auto& input : node->inputs) {
      const int j = trace.IndexOf(input.get());
      ASSERT_GE(j, 0) << "input of node " << i << " missing";
      EXPECT_LT(j, static_cast<int>(i)) << "input of node " << i << " comes after it";
    }
  }
  EXPECT_EQ(trace.nodes().size(), 5u);  // a, b, add, exp, mul
  EXPECT_EQ(trace.nodes().back(), d.node().get());
  EXPECT_GE(trace.IndexOf(a.node().get()), 0);
  EXPECT_GE(trace.IndexOf(c.node().get()), 0);
  EXPECT_EQ(trace.IndexOf(Leaf(1, 1).node().get()), -1);
  EXPECT_EQ(trace.IndexOf(nullptr), -1);
}

TEST(Trace, SharedNodesAppearOnce) {
  const Tensor a = Leaf(2, 2), b = Leaf(2, 2);
  const Tensor c = a + b;
  const Tensor d = c * c;
  const Trace trace = CollectOk({d});
  EXPECT_EQ(trace.nodes().size(), 4u);  // a, b, c, d
  const Trace both = CollectOk({d, c + 1.0});
  // a, b, c, d, the constant 1 (perhaps broadcast), and the add.
  EXPECT_EQ(std::count(both.nodes().begin(), both.nodes().end(), c.node().get()), 1);
  EXPECT_EQ(both.outputs().size(), 2u);
}

TEST(Trace, OutputsKeepTheirOrderAndAppearOnce) {
  const Tensor a = Leaf(2, 2);
  const Tensor u = a + 1.0, v = a * 2.0;
  const Trace trace = CollectOk({v, u, v});
  ASSERT_EQ(trace.outputs().size(), 2u);
  EXPECT_EQ(trace.outputs()[0], v.node().get());
  EXPECT_EQ(trace.outputs()[1], u.node().get());
}

TEST(Trace, RealizedOutputIsALeaf) {
  const Tensor a = Leaf(2, 2);
  const Trace trace = CollectOk({a});
  ASSERT_EQ(trace.nodes().size(), 1u);
  EXPECT_EQ(trace.nodes()[0], a.node().get());
  EXPECT_THAT(trace.outputs(), ElementsAre(a.node().get()));
}

TEST(Trace, CollectStopsAtRealizedNodes) {
  const Tensor x = Leaf(2, 2);
  const Tensor y = x * x;
  KILN_EXPECT_OK(y.realize());
  const Tensor z = y + y;
  const Trace trace = CollectOk({z});
  EXPECT_EQ(trace.nodes().size(), 2u);
  EXPECT_EQ(trace.IndexOf(x.node().get()), -1);
}

TEST(Trace, CollectOfErrorReturnsTheError) {
  const Tensor e = Leaf(2, 2) + Leaf(3, 3);
  ASSERT_FALSE(e.ok());
  absl::StatusOr<Trace> trace = Trace::Collect({Leaf(1, 1) + 1.0, e});
  EXPECT_EQ(trace.status(), e.status());
}

TEST(Trace, CollectOfUndefinedIsFailedPrecondition) {
  absl::StatusOr<Trace> trace = Trace::Collect({Tensor()});
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Trace, CollectOfADeepChain) {
  const Tensor x = Leaf(1, 1);
  Tensor t = x;
  for (int i = 0; i < 100000; ++i) t = t + x;
  const Trace trace = CollectOk({t});
  EXPECT_EQ(trace.nodes().size(), 100001u);
}

TEST(Trace, KeepsTheGraphAlive) {
  Tensor t = Leaf(2, 2) + Leaf(2, 2);
  std::weak_ptr<Node> watch = t.node();
  const Trace trace = CollectOk({t});
  t = Tensor();
  EXPECT_FALSE(watch.expired());
  EXPECT_THAT(trace.ToText(), HasSubstr("add"));
}

// ---- Text and DOT

TEST(Trace, ToTextNamesOpsShapesAndReferences) {
  const Tensor a = Leaf(2, 3), b = Leaf(2, 3);
  const Tensor c = a + b;
  const Tensor d = c * a;
  const Trace trace = CollectOk({d});
  const std::string text = trace.ToText();
  EXPECT_THAT(text, HasSubstr("add"));
  EXPECT_THAT(text, HasSubstr("mul"));
  EXPECT_THAT(text, HasSubstr("f32[2,3]"));
  EXPECT_THAT(text, HasSubstr("%0"));
  EXPECT_THAT(text, HasSubstr("%1"));
  const std::string mul_line =
      absl::StrCat("%", trace.IndexOf(d.node().get()), " = mul f32[2,3] %",
                   trace.IndexOf(c.node().get()), ", %", trace.IndexOf(a.node().get()));
  EXPECT_THAT(text, HasSubstr(mul_line)) << text;
  const std::string add_line =
      absl::StrCat("%", trace.IndexOf(c.node().get()), " = add f32[2,3] %",
                   trace.IndexOf(a.node().get()), ", %", trace.IndexOf(b.node().get()));
  EXPECT_THAT(text, HasSubstr(add_line)) << text;
}

TEST(Trace, ToTextShowsSymbolicShapes) {
  const Dim pos(Symbol("text_pos", 64));
  const Trace trace = CollectOk({zeros({2, pos + 1}, DType::kBF16)});
  const std::string text = trace.ToText();
  EXPECT_THAT(text, HasSubstr("bf16[2,text_pos+1]")) << text;
  EXPECT_THAT(text, HasSubstr("text_pos")) << text;
}

TEST(Trace, ToDotIsADigraphWithOneEdgePerInput) {
  const Tensor a = Leaf(2, 3), b = Leaf(2, 3);
  const Tensor c = a + b;
  const Tensor d = c * a;
  const Trace trace = CollectOk({d});
  const std::string dot = trace.ToDot();
  EXPECT_THAT(dot, StartsWith("digraph"));
  EXPECT_EQ(dot.back(), '\n');
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  int edges = 0;
  for (const Node* node : trace.nodes()) {
    if (!node->is_realized()) edges += static_cast<int>(node->inputs.size());
  }
  EXPECT_EQ(edges, 4);
  EXPECT_EQ(CountSubstr(dot, "->"), edges) << dot;
  const std::string edge =
      absl::StrCat("n", trace.IndexOf(c.node().get()), " -> n", trace.IndexOf(d.node().get()));
  EXPECT_THAT(dot, HasSubstr(edge)) << dot;
  EXPECT_THAT(dot, HasSubstr("mul"));
  EXPECT_THAT(dot, HasSubstr("add"));
}

// ---- StructuralHash

TEST(Trace, StructuralHashIsEqualForTheSameCodeOnDifferentData) {
  const Hash128 h1 = HashOf({Model(Leaf(2, 3, 0), Leaf(3, 4, 0))});
  const Hash128 h2 = HashOf({Model(Leaf(2, 3, 100), Leaf(3, 4, -7))});
  EXPECT_EQ(h1, h2);
  // And stable for one trace.
  const Trace t = CollectOk({Model(Leaf(2, 3), Leaf(3, 4))});
  EXPECT_EQ(t.StructuralHash(), t.StructuralHash());
  EXPECT_EQ(t.StructuralHash(), h1);
}

TEST(Trace, StructuralHashDiffersWithShape) {
  EXPECT_NE(HashOf({Model(Leaf(2, 3), Leaf(3, 4))}), HashOf({Model(Leaf(2, 3), Leaf(3, 5))}));
  EXPECT_NE(HashOf({Model(Leaf(2, 3), Leaf(3, 4))}), HashOf({Model(Leaf(4, 3), Leaf(3, 4))}));
  // Same element count, different shape.
  EXPECT_NE(HashOf({Leaf(2, 3) + 1.0}), HashOf({Leaf(3, 2) + 1.0}));
}

TEST(Trace, StructuralHashDiffersWithDType) {
  const Tensor a = Leaf(2, 3), b = Leaf(3, 4);
  EXPECT_NE(HashOf({Model(a, b)}), HashOf({Model(cast(a, DType::kF16), cast(b, DType::kF16))}));
  EXPECT_NE(HashOf({cast(a, DType::kF16)}), HashOf({cast(a, DType::kBF16)}));
  const Tensor h = Tensor::FromHost<Half>(std::vector<Half>(6), {2, 3});
  EXPECT_NE(HashOf({a + 1.0}), HashOf({h + 1.0}));
}

TEST(Trace, StructuralHashDiffersWithOp) {
  const Tensor a = Leaf(2, 3), b = Leaf(2, 3);
  EXPECT_NE(HashOf({a + b}), HashOf({a * b}));
  EXPECT_NE(HashOf({exp(a)}), HashOf({log(a)}));
  EXPECT_NE(HashOf({sum(a, 1)}), HashOf({max(a, 1)}));
}

TEST(Trace, StructuralHashDiffersWithReduceAxis) {
  const Tensor x = Leaf(3, 3);
  // Both results are f32[3].
  EXPECT_NE(HashOf({sum(x, 0)}), HashOf({sum(x, 1)}));
  EXPECT_EQ(HashOf({sum(x, 0)}), HashOf({sum(Leaf(3, 3, 5), 0)}));
}

TEST(Trace, StructuralHashDiffersWithKeepdim) {
  const Tensor x = Leaf(3, 3);
  EXPECT_NE(HashOf({sum(x, 1, true)}), HashOf({sum(x, 1, false)}));
}

TEST(Trace, StructuralHashDiffersWithPermutation) {
  const Tensor x = F32(Ramp(8, 0), {2, 2, 2});
  // Both results are f32[2,2,2].
  const int p1[] = {1, 0, 2};
  const int p2[] = {0, 2, 1};
  EXPECT_NE(HashOf({permute(x, p1)}), HashOf({permute(x, p2)}));
  EXPECT_EQ(HashOf({permute(x, p1)}), HashOf({permute(F32(Ramp(8, 3), {2, 2, 2}), p1)}));
}

TEST(Trace, StructuralHashDiffersWithConstantValue) {
  const Tensor x = Leaf(2, 2);
  EXPECT_NE(HashOf({x + 1.0}), HashOf({x + 2.0}));
  EXPECT_EQ(HashOf({x + 1.0}), HashOf({Leaf(2, 2, 9) + 1.0}));
  EXPECT_NE(HashOf({full({2}, 0.0)}), HashOf({full({2}, -0.0)}));
}

TEST(Trace, StructuralHashDiffersWithSliceStart) {
  const Tensor x = F32(Ramp(8, 0), {8});
  // Both results are f32[2].
  EXPECT_NE(HashOf({slice(x, 0, 0, 2)}), HashOf({slice(x, 0, 1, 3)}));
  EXPECT_NE(HashOf({slice(x, 0, 0, 4, 2)}), HashOf({slice(x, 0, 0, 2)}));
}

TEST(Trace, StructuralHashDiffersWithRandomSeed) {
  EXPECT_NE(HashOf({random_uniform({4}, 1)}), HashOf({random_uniform({4}, 2)}));
  EXPECT_NE(HashOf({random_uniform({4}, 1)}), HashOf({random_normal({4}, 1)}));
  EXPECT_EQ(HashOf({random_uniform({4}, 1)}), HashOf({random_uniform({4}, 1)}));
}

TEST(Trace, StructuralHashFollowsTheWiring) {
  const Tensor a = Leaf(2, 2, 0), b = Leaf(2, 2, 10);
  // a*b reads two leaves, a*a one.
  EXPECT_NE(HashOf({a * b}), HashOf({a * a}));
  // Same ops and shapes, but the mul reads a different leaf.
  EXPECT_NE(HashOf({(a - b) * a}), HashOf({(a - b) * b}));
  EXPECT_NE(HashOf({(a - b) * a}), HashOf({a * (a - b)}));
  // Leaves are interchangeable: their data is not hashed, so "the product of
  // two leaves of this layout" is one structure whichever leaf comes first.
  EXPECT_EQ(HashOf({a * b}), HashOf({b * a}));
  EXPECT_EQ(HashOf({(a - b) * a}), HashOf({(b - a) * b}));
}

TEST(Trace, StructuralHashDiffersWithOutputs) {
  const Tensor a = Leaf(2, 2);
  const Tensor u = a + 1.0;
  const Tensor v = u * 2.0;
  EXPECT_NE(HashOf({v}), HashOf({v, u}));
}

TEST(Trace, StructuralHashDiffersWithLeafLayout) {
  // A hand-built transposed leaf against a dense one of the same shape.
  const Tensor dense = StridedLeaf({3, 3}, {3, 1});
  const Tensor transposed = StridedLeaf({3, 3}, {1, 3});
  EXPECT_NE(HashOf({dense + 1.0}), HashOf({transposed + 1.0}));
  EXPECT_EQ(HashOf({dense + 1.0}), HashOf({Leaf(3, 3) + 1.0}));

  // The same through realize: a realized transpose is a strided view.
  const Tensor t = transpose(Leaf(3, 3), 0, 1);
  KILN_EXPECT_OK(t.realize());
  ASSERT_TRUE(t.is_realized());
  // permute is a view, so its realized value keeps the transposed strides.
  EXPECT_FALSE(t.node()->data.is_contiguous());
  EXPECT_NE(HashOf({t + 1.0}), HashOf({Leaf(3, 3) + 1.0}));
  EXPECT_EQ(HashOf({t + 1.0}), HashOf({transposed + 1.0}));
  EXPECT_THAT(testing::ReadF32(t + 1.0), ElementsAre(1, 4, 7, 2, 5, 8, 3, 6, 9));
}

TEST(Trace, StructuralHashDiffersWithDeviceType) {
  EXPECT_NE(HashOf({zeros({2})}), HashOf({zeros({2}, DType::kF32, Device::Cuda())}));
}

// The hash sees symbols by name and bound, never by value.
Tensor SymbolicModel(const Symbol& s) {
  const Tensor x = iota(Dim(s) + 1, 0, 1, DType::kF32);
  return sum(x * 2.0);
}

TEST(Trace, StructuralHashIgnoresSymbolValues) {
  const Symbol pos("hash_pos", 16);
  const Tensor t1 = SymbolicModel(pos);
  const Hash128 h1 = HashOf({t1});
  EXPECT_EQ(ValueOrFail(t1.item<float>(Bindings{{pos, 3}})), 2.0f * (0 + 1 + 2 + 3));
  const Tensor t2 = SymbolicModel(pos);
  const Hash128 h2 = HashOf({t2});
  EXPECT_EQ(ValueOrFail(t2.item<float>(Bindings{{pos, 7}})), 2.0f * 28);
  EXPECT_EQ(h1, h2);
}

TEST(Trace, StructuralHashDiffersWithSymbolNameOrBound) {
  const Hash128 base = HashOf({SymbolicModel(Symbol("hash_pos", 16))});
  EXPECT_EQ(base, HashOf({SymbolicModel(Symbol("hash_pos", 16))}));
  EXPECT_NE(base, HashOf({SymbolicModel(Symbol("hash_len", 16))}));
  EXPECT_NE(base, HashOf({SymbolicModel(Symbol("hash_pos", 17))}));
}

TEST(Trace, StructuralHashSeesSymbolsInAttributes) {
  // iota's start is an attribute; both results are f32[4].
  const Tensor a = iota(4, Dim(Symbol("start_a", 8)), 1, DType::kF32);
  const Tensor b = iota(4, Dim(Symbol("start_b", 8)), 1, DType::kF32);
  const Tensor c = iota(4, 0, 1, DType::kF32);
  EXPECT_NE(HashOf({a}), HashOf({b}));
  EXPECT_NE(HashOf({a}), HashOf({c}));
}

// ---- Symbols

TEST(Trace, SymbolsAreListedOnceSortedByName) {
  const Symbol zeta("zeta", 10), alpha("alpha", 10), mid("mid", 10);
  const Trace trace = CollectOk(
      {zeros({Dim(zeta)}), zeros({Dim(alpha), Dim(mid)}), zeros({Dim(alpha) + Dim(mid) + 1})});
  std::vector<std::string> names;
  for (const Symbol& s : trace.Symbols()) names.push_back(s.name());
  EXPECT_THAT(names, ElementsAre("alpha", "mid", "zeta"));
  EXPECT_TRUE(trace.Symbols()[0] == alpha);
}

TEST(Trace, SymbolsIncludeThoseInAttributes) {
  const Symbol start("sym_start", 4);
  const Trace iota_trace = CollectOk({iota(4, Dim(start), 1, DType::kI32)});
  ASSERT_EQ(iota_trace.Symbols().size(), 1u);
  EXPECT_TRUE(iota_trace.Symbols()[0] == start);

  const Symbol off("sym_off", 6);
  const Tensor sliced = slice(F32(Ramp(10, 0), {10}), 0, Dim(off), Dim(off) + 2);
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  EXPECT_TRUE(sliced.shape().is_concrete());
  const Trace slice_trace = CollectOk({sliced});
  ASSERT_EQ(slice_trace.Symbols().size(), 1u);
  EXPECT_TRUE(slice_trace.Symbols()[0] == off);
}

TEST(Trace, SymbolsOfConcreteTraceIsEmpty) {
  EXPECT_TRUE(CollectOk({Leaf(2, 2) * 3.0}).Symbols().empty());
}

TEST(Trace, SymbolsWithOneNameAndTwoBoundsAreBothListed) {
  const Symbol small("two_bounds", 4), big("two_bounds", 8);
  const Trace trace = CollectOk({zeros({Dim(big)}), zeros({Dim(small)})});
  const std::vector<Symbol> symbols = trace.Symbols();
  ASSERT_EQ(symbols.size(), 2u);
  EXPECT_EQ(symbols[0].name(), "two_bounds");
  EXPECT_EQ(symbols[1].name(), "two_bounds");
  EXPECT_FALSE(symbols[0] == symbols[1]);
}

}  // namespace
}  // namespace kiln
