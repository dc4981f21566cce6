#include <cmath>

#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using testing::AllClose;
using testing::F32;
using testing::ReadF32;

Tensor Random(std::vector<int64_t> sizes, uint64_t seed, DType dtype = DType::kF32) {
  Shape shape = Shape::FromExtents(sizes);
  return random_normal(shape, seed, 0, 1, dtype);
}

TEST(Softmax, RowsSumToOneAndMatchTheDefinition) {
  Tensor x = F32({1, 2, 3, -1, 0, 1000}, {2, 3});
  std::vector<float> y = ReadF32(softmax(x));
  const double z = std::exp(1) + std::exp(2) + std::exp(3);
  EXPECT_TRUE(AllClose({y[0], y[1], y[2]},
                       {float(std::exp(1) / z), float(std::exp(2) / z), float(std::exp(3) / z)}));
  // Max-subtracted: a huge logit does not overflow.
  EXPECT_TRUE(AllClose({y[3], y[4], y[5]}, {0, 0, 1}));
}

TEST(Softmax, WorksAlongAnyAxis) {
  Tensor x = Random({4, 5, 6}, 1);
  for (int axis : {0, 1, 2, -1}) {
    Tensor s = sum(softmax(x, axis), axis);
    std::vector<float> sums = ReadF32(s);
    EXPECT_TRUE(AllClose(sums, std::vector<float>(sums.size(), 1.0f), 1e-5)) << axis;
  }
}

TEST(Softmax, RejectsIntegers) {
  EXPECT_EQ(softmax(zeros({3}, DType::kI32)).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RmsNorm, OutputHasUnitRms) {
  Tensor x = Random({3, 64}, 2) * 5.0;
  std::vector<float> y = ReadF32(rms_norm(x, 1e-12));
  for (int r = 0; r < 3; ++r) {
    double ss = 0;
    for (int i = 0; i < 64; ++i) ss += double(y[r * 64 + i]) * y[r * 64 + i];
    EXPECT_NEAR(std::sqrt(ss / 64), 1.0, 1e-5);
  }
}

TEST(RmsNorm, AppliesWeightAndEps) {
  Tensor x = F32({3, 4}, {1, 2});
  Tensor w = F32({2, 0.5}, {2});
  const double rms = std::sqrt((9 + 16) / 2.0 + 1.0);
  EXPECT_TRUE(AllClose(ReadF32(rms_norm(x, w, 1.0)), {float(2 * 3 / rms), float(0.5 * 4 / rms)}));
  EXPECT_EQ(rms_norm(x, F32({1, 2, 3}, {3}), 1e-5).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LayerNorm, OutputHasZeroMeanAndUnitVariance) {
  Tensor x = Random({2, 32}, 3) * 3.0 + 7.0;
  std::vector<float> y = ReadF32(layer_norm(x, 1e-12));
  for (int r = 0; r < 2; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < 32; ++i) m += y[r * 32 + i];
    m /= 32;
    for (int i = 0; i < 32; ++i) v += (y[r * 32 + i] - m) * (y[r * 32 + i] - m);
    EXPECT_NEAR(m, 0, 1e-5);
    EXPECT_NEAR(v / 32, 1, 1e-4);
  }
  Tensor w = F32({2, 3}, {2});
  Tensor b = F32({1, -1}, {2});
  // Two elements normalize to -1, +1.
  EXPECT_TRUE(AllClose(ReadF32(layer_norm(F32({1, 5}, {2}), w, b, 0)), {-1, 2}));
}

// Reference RoPE on [seq, d] with explicit loops.
std::vector<float> RopeReference(const std::vector<float>& x, int seq, int d, int start,
                                 double theta, RopeStyle style) {
  std::vector<float> out(x.size());
  for (int t = 0; t < seq; ++t) {
    for (int i = 0; i < d / 2; ++i) {
      const double angle = (start + t) * std::pow(theta, -2.0 * i / d);
      const int a = style == RopeStyle::kInterleaved ? 2 * i : i;
      const int b = style == RopeStyle::kInterleaved ? 2 * i + 1 : i + d / 2;
      const double x0 = x[t * d + a], x1 = x[t * d + b];
      out[t * d + a] = float(x0 * std::cos(angle) - x1 * std::sin(angle));
      out[t * d + b] = float(x0 * std::sin(angle) + x1 * std::cos(angle));
    }
  }
  return out;
}

TEST(Rope, MatchesReferenceForBothConventions) {
  const int seq = 5, d = 8;
  Tensor x = Random({seq, d}, 4);
  std::vector<float> xv = ReadF32(x);
  for (RopeStyle style : {RopeStyle::kInterleaved, RopeStyle::kRotateHalf}) {
    Tensor y = rope(x, 3, RopeOptions{10000.0, style, 0});
    EXPECT_TRUE(AllClose(ReadF32(y), RopeReference(xv, seq, d, 3, 10000.0, style), 1e-5, 1e-4));
  }
}

TEST(Rope, PreservesNormsAndIsIdentityAtPositionZero) {
  Tensor x = Random({1, 4, 3, 16}, 5);  // [batch, seq, heads, head_dim]
  RopeOptions options;
  options.seq_axis = 1;
  std::vector<float> xv = ReadF32(x);
  std::vector<float> y = ReadF32(rope(x, 17, options));
  for (size_t row = 0; row < xv.size() / 16; ++row) {
    double nx = 0, ny = 0;
    for (int i = 0; i < 16; ++i) {
      nx += xv[row * 16 + i] * xv[row * 16 + i];
      ny += y[row * 16 + i] * y[row * 16 + i];
    }
    EXPECT_NEAR(std::sqrt(ny), std::sqrt(nx), 1e-4);
  }
  Tensor first = slice(x, 1, 0, 1);
  EXPECT_TRUE(AllClose(ReadF32(rope(first, 0, options)), ReadF32(first)));
}

TEST(Rope, RotateHalfEqualsInterleavedOnPermutedDims) {
  // Moving pair (2i, 2i+1) to (i, i + d/2) turns one convention into the other.
  const int d = 8;
  Tensor x = Random({3, 2, d}, 6);
  std::vector<int32_t> to_half_order;
  for (int i = 0; i < d / 2; ++i) to_half_order.push_back(2 * i);
  for (int i = 0; i < d / 2; ++i) to_half_order.push_back(2 * i + 1);
  Tensor perm = Tensor::FromHost<int32_t>(to_half_order, {d});
  RopeOptions interleaved{500.0, RopeStyle::kInterleaved, 0};
  RopeOptions half{500.0, RopeStyle::kRotateHalf, 0};
  Tensor a = index_select(rope(x, 2, interleaved), -1, perm);
  Tensor b = rope(index_select(x, -1, perm), 2, half);
  EXPECT_TRUE(AllClose(ReadF32(a), ReadF32(b), 1e-6));
}

TEST(Rope, SymbolicStartMatchesConcreteStart) {
  Symbol pos("pos", 100);
  Tensor x = Random({2, 4, 8}, 7);  // [seq, heads, d]
  RopeOptions options{10000.0, RopeStyle::kInterleaved, 0};
  EXPECT_TRUE(AllClose(ReadF32(rope(x, Dim(pos), options), {{pos, 42}}),
                       ReadF32(rope(x, 42, options))));
}

TEST(Rope, RejectsOddHeadDim) {
  Tensor r = rope(zeros({2, 5}), 0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("rope"));
  EXPECT_EQ(rope(zeros({2, 4}), 0, RopeOptions{10000.0, RopeStyle::kInterleaved, -1})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// Attention with loops, for q [H, Tq, D], k/v [Hkv, Tk, D].
std::vector<float> AttentionReference(const std::vector<float>& q, const std::vector<float>& k,
                                      const std::vector<float>& v, int h, int hkv, int tq,
                                      int tk, int d, bool causal) {
  std::vector<float> out(h * tq * d);
  for (int head = 0; head < h; ++head) {
    const int kh = head / (h / hkv);
    for (int i = 0; i < tq; ++i) {
      std::vector<double> s(tk);
      double m = -INFINITY;
      for (int j = 0; j < tk; ++j) {
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += q[(head * tq + i) * d + c] * k[(kh * tk + j) * d + c];
        s[j] = (causal && j > tk - tq + i) ? -INFINITY : dot / std::sqrt(d);
        m = std::max(m, s[j]);
      }
      double z = 0;
      for (int j = 0; j < tk; ++j) z += (s[j] = std::exp(s[j] - m));
      for (int c = 0; c < d; ++c) {
        double acc = 0;
        for (int j = 0; j < tk; ++j) acc += s[j] / z * v[(kh * tk + j) * d + c];
        out[(head * tq + i) * d + c] = float(acc);
      }
    }
  }
  return out;
}

TEST(Attention, OneKeyReturnsItsValue) {
  Tensor q = Random({1, 2, 3, 4}, 8);
  Tensor k = Random({1, 2, 1, 4}, 9);
  Tensor v = Random({1, 2, 1, 4}, 10);
  Tensor y = attention(q, k, v);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 3, 4}));
  EXPECT_TRUE(AllClose(ReadF32(y), ReadF32(expand(v, {1, 2, 3, 4}))));
}

TEST(Attention, MatchesReferenceWithGroupedHeadsAndCausalMask) {
  struct Case {
    int h, hkv, tq, tk, d;
    bool causal;
  };
  for (const Case& c : {Case{4, 2, 5, 5, 8, true}, Case{4, 1, 1, 7, 8, true},
                        Case{2, 2, 3, 6, 4, false}, Case{8, 4, 3, 9, 16, true}}) {
    Tensor q = Random({c.h, c.tq, c.d}, 11);
    Tensor k = Random({c.hkv, c.tk, c.d}, 12);
    Tensor v = Random({c.hkv, c.tk, c.d}, 13);
    Tensor y = attention(q, k, v, {.causal = c.causal});
    EXPECT_TRUE(AllClose(ReadF32(y),
                         AttentionReference(ReadF32(q), ReadF32(k), ReadF32(v), c.h, c.hkv, c.tq,
                                            c.tk, c.d, c.causal),
                         1e-5, 1e-4))
        << c.h << " " << c.hkv << " " << c.tq << " " << c.tk;
  }
}

TEST(Attention, CausalFirstQueryOnlySeesFirstKey) {
  Tensor q = Random({1, 3, 4}, 14);
  Tensor k = Random({1, 3, 4}, 15);
  Tensor v = F32({1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, {1, 3, 4});
  std::vector<float> y = ReadF32(attention(q, k, v, {.causal = true}));
  EXPECT_TRUE(AllClose({y[0], y[1], y[2], y[3]}, {1, 1, 1, 1}));
}

TEST(Attention, SymbolicKeyLengthForDecode) {
  Symbol len("len", 15);
  Tensor cache_k = Random({2, 16, 8}, 16);
  Tensor cache_v = Random({2, 16, 8}, 17);
  Tensor q = Random({4, 1, 8}, 18);
  Tensor k = slice(cache_k, 1, 0, Dim(len) + 1);
  Tensor v = slice(cache_v, 1, 0, Dim(len) + 1);
  Tensor y = attention(q, k, v, {.causal = true});
  ASSERT_TRUE(y.ok()) << y.status();
  Tensor expected = attention(q, slice(cache_k, 1, 0, 6), slice(cache_v, 1, 0, 6), {.causal = true});
  EXPECT_TRUE(AllClose(ReadF32(y, {{len, 5}}), ReadF32(expected)));
}

TEST(Attention, RejectsBadHeadCounts) {
  Tensor q = zeros({3, 2, 4});
  Tensor kv = zeros({2, 2, 4});
  Tensor y = attention(q, kv, kv);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(), HasSubstr("attention"));
  EXPECT_EQ(attention(zeros({2, 4}), zeros({2, 4}), zeros({2, 4})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(attention(zeros({1, 3, 4}), zeros({1, 2, 4}), zeros({1, 2, 4}), {.causal = true})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GatedMlp, MatchesTheFormula) {
  Tensor x = Random({3, 8}, 19);
  Tensor w1 = Random({8, 5}, 20);
  Tensor w2 = Random({8, 5}, 21);
  Tensor w3 = Random({5, 8}, 22);
  std::vector<float> xv = ReadF32(x), a = ReadF32(w1), b = ReadF32(w2), c = ReadF32(w3);
  std::vector<float> expected(3 * 8);
  for (int r = 0; r < 3; ++r) {
    std::vector<double> h(5);
    for (int j = 0; j < 5; ++j) {
      double g = 0, u = 0;
      for (int i = 0; i < 8; ++i) {
        g += xv[r * 8 + i] * a[i * 5 + j];
        u += xv[r * 8 + i] * b[i * 5 + j];
      }
      h[j] = g / (1 + std::exp(-g)) * u;
    }
    for (int o = 0; o < 8; ++o) {
      double acc = 0;
      for (int j = 0; j < 5; ++j) acc += h[j] * c[j * 8 + o];
      expected[r * 8 + o] = float(acc);
    }
  }
  EXPECT_TRUE(AllClose(ReadF32(gated_mlp(x, w1, w2, w3)), expected, 1e-4, 1e-4));
}

TEST(Composites, WorkInHalfPrecision) {
  Tensor x = Random({4, 16}, 23);
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    Tensor xh = cast(x, dtype);
    const double tol = dtype == DType::kF16 ? 5e-3 : 3e-2;
    EXPECT_TRUE(AllClose(ReadF32(softmax(xh)), ReadF32(softmax(x)), tol, tol));
    EXPECT_TRUE(AllClose(ReadF32(rms_norm(xh, 1e-6)), ReadF32(rms_norm(x, 1e-6)), tol, tol));
    EXPECT_EQ(softmax(xh).dtype(), dtype);
  }
}

}  // namespace
}  // namespace kiln
