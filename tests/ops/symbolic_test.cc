// Symbolic dims end to end: a decode-style loop whose trace keeps one
// structure while the position changes.
#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using testing::AllClose;
using testing::ReadF32;

struct DecodeStep {
  Tensor out;
  Tensor k_cache;
  Tensor v_cache;
};

// One attention step at position `pos` over a [heads, max_len, d] cache.
DecodeStep Step(const Tensor& x, const Tensor& wq, const Tensor& wk, const Tensor& wv,
                const Tensor& k_cache, const Tensor& v_cache, const Dim& pos) {
  const Tensor q = reshape(matmul(x, wq), {1, 2, 4});  // [seq=1, heads, d]
  const Tensor k = reshape(matmul(x, wk), {1, 2, 4});
  const Tensor v = reshape(matmul(x, wv), {1, 2, 4});
  RopeOptions options{10000.0, RopeStyle::kInterleaved, 0};
  const Tensor qr = transpose(rope(q, pos, options), 0, 1);  // [heads, 1, d]
  const Tensor kr = transpose(rope(k, pos, options), 0, 1);
  DecodeStep step;
  step.k_cache = slice_update(k_cache, kr, 1, pos);
  step.v_cache = slice_update(v_cache, transpose(v, 0, 1), 1, pos);
  const Tensor keys = slice(step.k_cache, 1, 0, pos + 1);
  const Tensor values = slice(step.v_cache, 1, 0, pos + 1);
  step.out = attention(qr, keys, values, {.causal = true});
  return step;
}

TEST(Symbolic, DecodeLoopKeepsOneTraceStructure) {
  const Symbol pos("pos", 7);
  const Tensor wq = random_normal({8, 8}, 1);
  const Tensor wk = random_normal({8, 8}, 2);
  const Tensor wv = random_normal({8, 8}, 3);
  KILN_EXPECT_OK(RealizeAll({wq, wk, wv}));
  Tensor k_sym = contiguous(zeros({2, 8, 4}));
  Tensor v_sym = contiguous(zeros({2, 8, 4}));
  Tensor k_con = contiguous(zeros({2, 8, 4}));
  Tensor v_con = contiguous(zeros({2, 8, 4}));
  KILN_EXPECT_OK(RealizeAll({k_sym, v_sym, k_con, v_con}));

  std::optional<Hash128> first_hash;
  for (int64_t p = 0; p < 6; ++p) {
    const Tensor x = random_normal({1, 8}, 100 + p);
    KILN_EXPECT_OK(x.realize());
    DecodeStep sym = Step(x, wq, wk, wv, k_sym, v_sym, Dim(pos));
    DecodeStep con = Step(x, wq, wk, wv, k_con, v_con, Dim(p));

    absl::StatusOr<Trace> trace = Trace::Collect({sym.out, sym.k_cache, sym.v_cache});
    ASSERT_TRUE(trace.ok()) << trace.status();
    if (!first_hash) first_hash = trace->StructuralHash();
    EXPECT_EQ(trace->StructuralHash(), *first_hash) << "step " << p;
    ASSERT_EQ(trace->Symbols().size(), 1u);

    const Bindings bindings{{pos, p}};
    KILN_EXPECT_OK(RealizeAll({sym.out, sym.k_cache, sym.v_cache}, bindings));
    KILN_EXPECT_OK(RealizeAll({con.out, con.k_cache, con.v_cache}));
    EXPECT_TRUE(AllClose(ReadF32(sym.out), ReadF32(con.out))) << "step " << p;
    k_sym = sym.k_cache;
    v_sym = sym.v_cache;
    k_con = con.k_cache;
    v_con = con.v_cache;
  }
  EXPECT_TRUE(AllClose(ReadF32(k_sym), ReadF32(k_con)));
}

TEST(Symbolic, ShapesPrintWithSymbols) {
  const Symbol n("n", 32);
  Tensor x = zeros({Dim(n) + 1, 4});
  Tensor y = sum(x * 2.0, 1);
  EXPECT_EQ(y.shape().ToString(), "[n+1]");
  absl::StatusOr<Trace> trace = Trace::Collect({y});
  ASSERT_TRUE(trace.ok());
  EXPECT_THAT(trace->ToText(), ::testing::HasSubstr("n<=32"));
  EXPECT_EQ(ReadF32(y, {{n, 2}}), (std::vector<float>{0, 0, 0}));
}

TEST(Symbolic, BroadcastIsDecidedStructurally) {
  const Symbol n("n", 32);
  Tensor a = zeros({Dim(n), 4});
  EXPECT_TRUE(add(a, zeros({1, 4})).ok());
  EXPECT_TRUE(add(a, zeros({Dim(n), 1})).ok());
  Tensor bad = add(a, zeros({5, 4}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("n"));
}

}  // namespace
}  // namespace kiln
