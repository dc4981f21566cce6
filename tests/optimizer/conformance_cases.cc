#include "tests/optimizer/conformance_cases.h"

#include <cmath>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/ops.h"
#include "tensor/convert.h"

namespace kiln::testing {
namespace {

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
using Shapes = std::vector<std::vector<int64_t>>;

const std::vector<DType> kFloats = {DType::kF32, DType::kF16, DType::kBF16};
const std::vector<DType> kInts = {DType::kI32, DType::kI64, DType::kU8};

std::string ShapeName(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ","), "]"); }

// Tolerances per dtype; `loose` for reductions and products, whose order of
// summation differs between the CPU and the GPU.
void SetTolerance(ConformanceCase& c, DType dtype, bool loose) {
  switch (dtype) {
    case DType::kF32:
      c.atol = loose ? 1e-4 : 1e-5;
      c.rtol = loose ? 1e-4 : 1e-5;
      break;
    case DType::kF16:
      c.atol = loose ? 1e-2 : 2e-3;
      c.rtol = loose ? 1e-2 : 2e-3;
      break;
    case DType::kBF16:
      c.atol = loose ? 6e-2 : 1.6e-2;
      c.rtol = loose ? 6e-2 : 1.6e-2;
      break;
    default:
      c.atol = 0;
      c.rtol = 0;
      break;
  }
}

class Builder {
 public:
  explicit Builder(bool every_shape) : every_shape_(every_shape) {}

  void Add(std::string name, std::vector<InputSpec> inputs, Fn build, DType dtype, bool loose,
           Bindings bindings = {}) {
    ConformanceCase c;
    c.name = std::move(name);
    c.inputs = std::move(inputs);
    c.build = std::move(build);
    c.bindings = std::move(bindings);
    SetTolerance(c, dtype, loose);
    cases_.push_back(std::move(c));
  }

  // The shapes to use: all, or just the first.
  Shapes Pick(const Shapes& shapes) const {
    return every_shape_ ? shapes : Shapes{shapes.front()};
  }

  std::vector<ConformanceCase> Take() { return std::move(cases_); }
  bool every_shape() const { return every_shape_; }

 private:
  bool every_shape_;
  std::vector<ConformanceCase> cases_;
};

InputSpec In(DType dtype, std::vector<int64_t> sizes, double low = -2, double high = 2,
             InputSpec::Layout layout = InputSpec::Layout::kDense) {
  InputSpec s;
  s.dtype = dtype;
  s.sizes = std::move(sizes);
  s.low = low;
  s.high = high;
  s.layout = layout;
  return s;
}

const Shapes kElementShapes = {{17, 127}, {1}, {3}, {17}, {127}, {4097}, {64, 64}, {3, 5, 7}};

// Value ranges where each unary op is defined and well conditioned.
std::pair<double, double> UnaryRange(OpKind op) {
  switch (op) {
    case OpKind::kLog:
    case OpKind::kSqrt:
    case OpKind::kRsqrt:
      return {0.1, 4};
    case OpKind::kRecip:
      return {0.5, 3};
    case OpKind::kExp:
      return {-4, 4};
    default:
      return {-3, 3};
  }
}

void AddUnary(Builder& b) {
  using UnaryFn = Tensor (*)(const Tensor&);
  const std::vector<std::pair<OpKind, UnaryFn>> ops = {
      {OpKind::kNeg, neg},       {OpKind::kAbs, abs},         {OpKind::kExp, exp},
      {OpKind::kLog, log},       {OpKind::kSqrt, sqrt},       {OpKind::kRsqrt, rsqrt},
      {OpKind::kRecip, recip},   {OpKind::kSquare, square},   {OpKind::kSin, sin},
      {OpKind::kCos, cos},       {OpKind::kTanh, tanh},       {OpKind::kSigmoid, sigmoid},
      {OpKind::kSilu, silu},     {OpKind::kGelu, gelu},       {OpKind::kRelu, relu}};
  for (const auto& [op, fn] : ops) {
    const auto [lo, hi] = UnaryRange(op);
    const bool int_ok = op == OpKind::kNeg || op == OpKind::kAbs || op == OpKind::kSquare ||
                        op == OpKind::kRelu;
    std::vector<DType> dtypes = kFloats;
    if (int_ok) dtypes.insert(dtypes.end(), kInts.begin(), kInts.end());
    for (DType dt : dtypes) {
      const double ilo = dt == DType::kU8 ? 0 : -100, ihi = dt == DType::kU8 ? 255 : 100;
      for (const auto& shape : b.Pick(kElementShapes)) {
        const bool f = IsFloating(dt);
        b.Add(absl::StrCat(OpName(op), "/", DTypeName(dt), "/", ShapeName(shape)),
              {In(dt, shape, f ? lo : ilo, f ? hi : ihi)},
              [fn = fn](const std::vector<Tensor>& x) { return std::vector<Tensor>{fn(x[0])}; }, dt,
              false);
      }
      // Through a transposed view.
      b.Add(absl::StrCat(OpName(op), "/", DTypeName(dt), "/transposed"),
            {In(dt, {33, 17}, IsFloating(dt) ? lo : ilo, IsFloating(dt) ? hi : ihi,
                InputSpec::Layout::kTransposed)},
            [fn = fn](const std::vector<Tensor>& x) { return std::vector<Tensor>{fn(x[0])}; }, dt,
            false);
    }
  }
}

void AddBinary(Builder& b) {
  using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::tuple<std::string, BinaryFn, bool>> ops = {
      {"add", add, true},         {"sub", sub, true},         {"mul", mul, true},
      {"div", div, true},         {"pow", pow, false},        {"maximum", maximum, true},
      {"minimum", minimum, true}, {"eq", eq, true},           {"ne", ne, true},
      {"lt", lt, true},           {"le", le, true},           {"gt", gt, true},
      {"ge", ge, true}};
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{17, 127}, {17, 127}}, {{17, 127}, {127}}, {{17, 127}, {17, 1}}, {{1}, {4097}},
      {{3, 1, 5}, {1, 17, 5}}, {{4097}, {4097}}};
  for (const auto& [name, fn, int_ok] : ops) {
    std::vector<DType> dtypes = kFloats;
    if (int_ok) dtypes.insert(dtypes.end(), kInts.begin(), kInts.end());
    for (DType dt : dtypes) {
      const bool f = IsFloating(dt);
      double alo = f ? -3 : -50, ahi = f ? 3 : 50, blo = alo, bhi = ahi;
      if (dt == DType::kU8) alo = blo = 0, ahi = bhi = 255;
      if (name == "div") blo = f ? 0.5 : 1, bhi = f ? 3 : 9;  // denominators away from 0
      if (name == "pow") alo = 0.2, ahi = 3;
      std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> picked = shapes;
      if (!b.every_shape()) picked = {shapes.front()};
      for (const auto& [sa, sb] : picked) {
        b.Add(absl::StrCat(name, "/", DTypeName(dt), "/", ShapeName(sa), "x", ShapeName(sb)),
              {In(dt, sa, alo, ahi), In(dt, sb, blo, bhi)},
              [fn = fn](const std::vector<Tensor>& x) { return std::vector<Tensor>{fn(x[0], x[1])}; },
              dt, false);
      }
    }
  }
  for (DType dt : {DType::kF32, DType::kF16, DType::kI32}) {
    b.Add(absl::StrCat("where/", DTypeName(dt)),
          {In(DType::kBool, {17, 1}, 0, 1), In(dt, {17, 127}), In(dt, {127})},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{where(x[0], x[1], x[2])}; },
          dt, false);
  }
}

void AddCasts(Builder& b) {
  const std::vector<DType> all = {DType::kF32, DType::kF16, DType::kBF16, DType::kI32,
                                  DType::kI64, DType::kU8,  DType::kBool};
  for (DType from : all) {
    for (DType to : all) {
      if (from == to) continue;
      const double lo = from == DType::kU8 || from == DType::kBool ? 0 : -300;
      const double hi = from == DType::kBool ? 1 : 300;
      b.Add(absl::StrCat("cast/", DTypeName(from), "_to_", DTypeName(to)), {In(from, {4097}, lo, hi)},
            [to = to](const std::vector<Tensor>& x) { return std::vector<Tensor>{cast(x[0], to)}; },
            to, false);
    }
  }
}

void AddReductions(Builder& b) {
  struct Shape_ {
    std::vector<int64_t> sizes;
    std::vector<int> axes;
    bool keepdim;
  };
  const std::vector<Shape_> shapes = {
      {{17, 127}, {-1}, true},     {{1, 1}, {-1}, false},      {{3, 4097}, {1}, false},
      {{127, 17}, {0}, true},      {{3, 17, 5}, {1}, true},    {{3, 17, 5}, {0, 2}, false},
      {{64, 64}, {}, false},       {{4097, 3}, {-1}, true}};
  using ReduceFn = Tensor (*)(const Tensor&, absl::Span<const int>, bool);
  const std::vector<std::tuple<std::string, ReduceFn, bool>> ops = {
      {"sum", sum, true}, {"max", max, true}, {"mean", mean, false}};
  for (const auto& [name, fn, int_ok] : ops) {
    std::vector<DType> dtypes = kFloats;
    if (int_ok) dtypes.insert(dtypes.end(), {DType::kI32, DType::kI64});
    for (DType dt : dtypes) {
      std::vector<Shape_> picked = shapes;
      if (!b.every_shape()) picked = {shapes.front(), shapes[5]};
      for (const Shape_& s : picked) {
        b.Add(absl::StrCat(name, "/", DTypeName(dt), "/", ShapeName(s.sizes), "/axes",
                           absl::StrJoin(s.axes, "_"), s.keepdim ? "/keep" : ""),
              {In(dt, s.sizes, IsFloating(dt) ? -2 : -40, IsFloating(dt) ? 2 : 40)},
              [fn = fn, s](const std::vector<Tensor>& x) {
                return std::vector<Tensor>{fn(x[0], s.axes, s.keepdim)};
              },
              dt, true);
      }
    }
  }
}

void AddMatmul(Builder& b) {
  const std::vector<std::array<int64_t, 3>> mkn = {{17, 33, 5},   {1, 1, 1},     {3, 17, 5},
                                                   {127, 64, 129}, {64, 64, 64}, {1, 4097, 3},
                                                   {1, 256, 200}, {130, 40, 70}};
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32}) {
    const bool f = IsFloating(dt);
    std::vector<std::array<int64_t, 3>> picked = mkn;
    if (!b.every_shape()) picked = {mkn.front()};
    for (const auto& [m, k, n] : picked) {
      b.Add(absl::StrCat("matmul/", DTypeName(dt), "/", m, "x", k, "x", n),
            {In(dt, {m, k}, f ? -1 : -9, f ? 1 : 9), In(dt, {k, n}, f ? -1 : -9, f ? 1 : 9)},
            [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1])}; },
            dt, true);
    }
    // A transposed weight (the layout of every projection) with an epilogue.
    b.Add(absl::StrCat("matmul/", DTypeName(dt), "/weight_t_epilogue"),
          {In(dt, {5, 48}, -1, 1), In(dt, {48, 70}, -1, 1, InputSpec::Layout::kTransposed),
           In(dt, {5, 70}, -1, 1)},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1]) + x[2]}; },
          dt, true);
    // Decode: one row against a transposed weight, with a residual epilogue.
    b.Add(absl::StrCat("matmul/", DTypeName(dt), "/decode_weight_t"),
          {In(dt, {1, 300}, -1, 1), In(dt, {300, 129}, -1, 1, InputSpec::Layout::kTransposed),
           In(dt, {1, 129}, -1, 1)},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1]) + x[2]}; },
          dt, true);
    // Decode against short transposed columns (attention's scores over a
    // 64-wide head; 24 values): a group of lanes within a warp per column.
    b.Add(absl::StrCat("matmul/", DTypeName(dt), "/decode_short_k"),
          {In(dt, {4, 64}, -1, 1), In(dt, {64, 129}, -1, 1, InputSpec::Layout::kTransposed)},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1])}; }, dt, true);
    b.Add(absl::StrCat("matmul/", DTypeName(dt), "/decode_k24"),
          {In(dt, {2, 24}, -1, 1), In(dt, {24, 70}, -1, 1, InputSpec::Layout::kTransposed),
           In(dt, {2, 70}, -1, 1)},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1]) + x[2]}; },
          dt, true);
    // Prefill-sized products (the pipelined tensor-core kernel for f16 and
    // bf16): a transposed weight with K not a multiple of the 32-wide K tile,
    // odd K (element loads), B stored [K, N], a batch, and an f32 operand.
    b.Add(absl::StrCat("matmul/", DTypeName(dt), "/prefill_weight_t"),
          {In(dt, {300, 72}, -1, 1), In(dt, {72, 200}, -1, 1, InputSpec::Layout::kTransposed),
           In(dt, {300, 200}, -1, 1)},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1]) + x[2]}; },
          dt, true);
    b.Add(absl::StrCat("matmul/", DTypeName(dt), "/prefill_odd_k"),
          {In(dt, {129, 33}, -1, 1), In(dt, {33, 65}, -1, 1)},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1])}; }, dt, true);
    b.Add(absl::StrCat("matmul/", DTypeName(dt), "/prefill_tall"),
          {In(dt, {4097, 16}, -1, 1), In(dt, {16, 3}, -1, 1, InputSpec::Layout::kTransposed)},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1])}; }, dt, true);
    b.Add(absl::StrCat("matmul/", DTypeName(dt), "/prefill_batched"),
          {In(dt, {3, 130, 64}, -1, 1), In(dt, {3, 64, 96}, -1, 1)},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1])}; }, dt, true);
    if (dt == DType::kF16 || dt == DType::kBF16) {
      b.Add(absl::StrCat("matmul/", DTypeName(dt), "/prefill_f32_operand"),
            {In(DType::kF32, {257, 40}, -1, 1), In(dt, {40, 136}, -1, 1, InputSpec::Layout::kTransposed)},
            [dt](const std::vector<Tensor>& x) {
              return std::vector<Tensor>{matmul(cast(mul(x[0], 1.5), dt), x[1])};
            },
            dt, true);
    }
    b.Add(absl::StrCat("matmul/", DTypeName(dt), "/batched_broadcast"),
          {In(dt, {2, 1, 17, 33}, -1, 1), In(dt, {3, 33, 5}, -1, 1)},
          [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1])}; }, dt,
          true);
  }
}

void AddMovement(Builder& b) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kI32, DType::kBool}) {
    const std::string d(DTypeName(dt));
    const double lo = dt == DType::kBool ? 0 : -5, hi = dt == DType::kBool ? 1 : 5;
    b.Add("views/" + d, {In(dt, {6, 4, 5}, lo, hi)}, [](const std::vector<Tensor>& x) {
      Tensor v = reshape(permute(x[0], {2, 0, 1}), {5, 24});
      return std::vector<Tensor>{contiguous(slice(v, 1, 3, 23, 2)), expand(unsqueeze(slice(x[0], 0, 1, 4), 0), {2, 3, 4, 5})};
    }, dt, false);
    b.Add("concat/" + d, {In(dt, {3, 5}, lo, hi), In(dt, {17, 5}, lo, hi), In(dt, {1, 5}, lo, hi)},
          [](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{concat({x[0], x[1], x[2]}, 0),
                                       concat({transpose(x[0], 0, 1), transpose(x[2], 0, 1)}, 1)};
          },
          dt, false);
    b.Add("index_select/" + d,
          {In(dt, {127, 17}, lo, hi), In(DType::kI32, {33}, 0, 126), In(DType::kI64, {2, 3}, 0, 16)},
          [](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{index_select(x[0], 0, x[1]), index_select(x[0], 1, x[2])};
          },
          dt, false);
    b.Add("slice_update/" + d, {In(dt, {17, 9}, lo, hi), In(dt, {3, 9}, lo, hi)},
          [](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{slice_update(x[0], x[1], 0, 5)};
          },
          dt, false);
  }
  const Symbol pos("pos", 16);
  b.Add("slice_update/symbolic_start", {In(DType::kF32, {17, 9}), In(DType::kF32, {1, 9})},
        [pos](const std::vector<Tensor>& x) {
          return std::vector<Tensor>{slice_update(x[0], x[1], 0, Dim(pos))};
        },
        DType::kF32, false, Bindings{{pos, 11}});
  b.Add("sources/f32", {In(DType::kF32, {1})}, [pos](const std::vector<Tensor>& x) {
    const Device d = x[0].device();
    return std::vector<Tensor>{iota(Dim(pos) + 3, Dim(pos), 0.5, DType::kF32, d),
                               arange(-1.5, 7, 0.25, DType::kF16, d),
                               random_uniform({127, 33}, 7, -2, 3, DType::kF32, d),
                               random_normal({4097}, 9, 0, 1, DType::kF32, d),
                               full({3, 5}, 2.5, DType::kBF16, d) + cast(x[0], DType::kBF16),
                               iota(300, 0, 1, DType::kU8, d)};
  }, DType::kF32, false, Bindings{{pos, 5}});
}

void AddComposites(Builder& b) {
  for (DType dt : kFloats) {
    const std::string d(DTypeName(dt));
    for (const auto& shape : b.Pick({{17, 127}, {1, 1}, {3, 4097}, {64, 64}})) {
      b.Add("softmax/" + d + "/" + ShapeName(shape), {In(dt, shape, -4, 4)},
            [](const std::vector<Tensor>& x) { return std::vector<Tensor>{softmax(x[0])}; }, dt, true);
      b.Add("rms_norm/" + d + "/" + ShapeName(shape),
            {In(dt, shape), In(dt, {shape.back()}, 0.5, 1.5)},
            [](const std::vector<Tensor>& x) { return std::vector<Tensor>{rms_norm(x[0], x[1], 1e-5)}; },
            dt, true);
      b.Add("layer_norm/" + d + "/" + ShapeName(shape),
            {In(dt, shape), In(dt, {shape.back()}), In(dt, {shape.back()})},
            [](const std::vector<Tensor>& x) {
              return std::vector<Tensor>{layer_norm(x[0], x[1], x[2], 1e-5)};
            },
            dt, true);
    }
    for (RopeStyle style : {RopeStyle::kInterleaved, RopeStyle::kRotateHalf}) {
      b.Add("rope/" + d + (style == RopeStyle::kInterleaved ? "/interleaved" : "/rotate_half"),
            {In(dt, {17, 4, 64})}, [style](const std::vector<Tensor>& x) {
              return std::vector<Tensor>{rope(x[0], 3, RopeOptions{10000.0, style, 0})};
            },
            dt, true);
    }
    const Symbol len("len", 63);
    b.Add("attention/" + d + "/prefill_gqa_causal",
          {In(dt, {8, 17, 32}), In(dt, {2, 17, 32}), In(dt, {2, 17, 32})},
          [](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{attention(x[0], x[1], x[2], {.causal = true})};
          },
          dt, true);
    b.Add("attention/" + d + "/decode_symbolic",
          {In(dt, {8, 1, 32}), In(dt, {2, 64, 32}), In(dt, {2, 64, 32})},
          [len](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{attention(x[0], slice(x[1], 1, 0, Dim(len) + 1),
                                                 slice(x[2], 1, 0, Dim(len) + 1), {.causal = true})};
          },
          dt, true, Bindings{{len, 40}});
    b.Add("gated_mlp/" + d, {In(dt, {3, 64}, -1, 1), In(dt, {64, 96}, -0.3, 0.3),
                             In(dt, {64, 96}, -0.3, 0.3), In(dt, {96, 64}, -0.3, 0.3)},
          [](const std::vector<Tensor>& x) {
            return std::vector<Tensor>{gated_mlp(x[0], x[1], x[2], x[3])};
          },
          dt, true);
  }
}

// Host values for one input: its own dtype, uniform in [low, high].
Tensor HostValues(const InputSpec& spec, const std::vector<int64_t>& sizes, std::mt19937_64& rng) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> values(n);
  std::uniform_real_distribution<double> real(spec.low, spec.high);
  for (double& v : values) {
    v = real(rng);
    if (!IsFloating(spec.dtype)) v = std::round(v);
  }
  std::vector<char> bytes(n * DTypeSize(spec.dtype));
  ConvertFromDouble(values.data(), spec.dtype, bytes.data(), n);
  return Tensor::FromHostBytes(spec.dtype, sizes, bytes.data(), bytes.size());
}

}  // namespace

std::string TestName(const ::testing::TestParamInfo<ConformanceCase>& info) {
  std::string name = info.param.name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

namespace {

// The high bytes of each block's f16 scales (d, and dmin where there is
// one), so that random blocks can be given moderate, finite scales.
std::vector<int> ScaleHighBytes(QuantFormat format) {
  switch (format) {
    case QuantFormat::kQ8_0:
    case QuantFormat::kQ4_0:
    case QuantFormat::kQ5_0: return {1};
    case QuantFormat::kQ4_1:
    case QuantFormat::kQ5_1:
    case QuantFormat::kQ4_K:
    case QuantFormat::kQ5_K: return {1, 3};
    case QuantFormat::kQ2_K: return {81, 83};
    case QuantFormat::kQ3_K: return {109};
    case QuantFormat::kQ6_K: return {209};
  }
  return {};
}

// Random block bytes [rows, bytes] whose scales lie in [2^-7, 2^-5): their
// high bytes become 0x20 + byte / 32 (positive, exponent 8 or 9). Everything
// else stays as drawn, so every quant value and sub-scale is exercised.
Tensor TameScales(const Tensor& bytes, QuantFormat format) {
  const QuantFormatInfo& info = QuantInfo(format);
  const int64_t rows = bytes.shape()[0].value(), row_bytes = bytes.shape()[1].value();
  const Tensor blocks = reshape(bytes, {rows, row_bytes / info.block_bytes, info.block_bytes});
  const Tensor at = iota(info.block_bytes, 0, 1, DType::kI32, bytes.device());
  Tensor mask;
  for (int b : ScaleHighBytes(format)) {
    const Tensor here = eq(at, full({}, b, DType::kI32, bytes.device()));
    mask = mask.defined() ? where(here, here, mask) : here;
  }
  const Tensor tamed = add(div(blocks, 32.0), 32.0);
  return reshape(where(mask, tamed, blocks), {rows, row_bytes});
}

void AddDequantize(Builder& b) {
  for (QuantFormat format : {QuantFormat::kQ8_0, QuantFormat::kQ4_0, QuantFormat::kQ4_1, QuantFormat::kQ5_0,
                             QuantFormat::kQ5_1, QuantFormat::kQ2_K, QuantFormat::kQ3_K, QuantFormat::kQ4_K,
                             QuantFormat::kQ5_K, QuantFormat::kQ6_K}) {
    const QuantFormatInfo& info = QuantInfo(format);
    const std::string name = absl::AsciiStrToLower(info.name);
    // Three rows of two blocks, and rows taken every other one (a strided view).
    for (auto layout : {InputSpec::Layout::kDense, InputSpec::Layout::kStrided}) {
      b.Add(absl::StrCat("dequantize/", name, layout == InputSpec::Layout::kDense ? "/[3,2]" : "/strided"),
            {In(DType::kU8, {3, 2 * info.block_bytes}, 0, 255, layout)},
            [format](const std::vector<Tensor>& x) {
              return std::vector<Tensor>{dequantize(TameScales(contiguous(x[0]), format), format)};
            },
            DType::kF32, false);
    }
    // Into a decode product (one row) and a prefill product, bf16, with the
    // weight stored [N, K] as GGUF stores it.
    for (int64_t m : {int64_t{1}, int64_t{130}}) {
      b.Add(absl::StrCat("dequantize/", name, m == 1 ? "/decode_product" : "/prefill_product"),
            {In(DType::kBF16, {m, 2 * info.block_size}, -1, 1), In(DType::kU8, {17, 2 * info.block_bytes}, 0, 255)},
            [format](const std::vector<Tensor>& x) {
              // contiguous: the blocks get a buffer, as a weight has, which the
              // decode product decodes in its loads.
              const Tensor w = dequantize(contiguous(TameScales(x[1], format)), format, DType::kBF16);
              return std::vector<Tensor>{matmul(x[0], transpose(w, 0, 1))};
            },
            DType::kBF16, true);
    }
  }
  // A decode product whose rows of A are a reshaped transpose (attention's
  // output before the output projection): A's offsets need index arithmetic.
  for (QuantFormat format : {QuantFormat::kQ8_0, QuantFormat::kQ4_K}) {
    const QuantFormatInfo& info = QuantInfo(format);
    b.Add(absl::StrCat("dequantize/", absl::AsciiStrToLower(info.name), "/decode_product_of_a_view"),
          {In(DType::kBF16, {2, 1, info.block_size}, -1, 1), In(DType::kU8, {17, 2 * info.block_bytes}, 0, 255)},
          [format](const std::vector<Tensor>& x) {
            const Tensor w = dequantize(contiguous(TameScales(x[1], format)), format, DType::kBF16);
            const Tensor a = reshape(transpose(x[0], 0, 1), {1, 2 * QuantInfo(format).block_size});
            return std::vector<Tensor>{matmul(a, transpose(w, 0, 1))};
          },
          DType::kBF16, true);
  }
}

}  // namespace

std::vector<ConformanceCase> ConformanceCases(bool every_shape) {
  Builder b(every_shape);
  AddUnary(b);
  AddBinary(b);
  AddCasts(b);
  AddReductions(b);
  AddMatmul(b);
  AddMovement(b);
  AddComposites(b);
  AddDequantize(b);
  return b.Take();
}

std::vector<Tensor> MakeInputs(const ConformanceCase& c, uint64_t seed, Device device) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> out;
  for (const InputSpec& spec : c.inputs) {
    std::vector<int64_t> base = spec.sizes;
    if (spec.layout == InputSpec::Layout::kTransposed && base.size() >= 2) {
      std::swap(base[base.size() - 1], base[base.size() - 2]);
    }
    if (spec.layout == InputSpec::Layout::kStrided) base[0] *= 2;
    Tensor t = to(HostValues(spec, base, rng), device);
    if (spec.layout == InputSpec::Layout::kTransposed && base.size() >= 2) {
      t = transpose(t, -1, -2);
    }
    if (spec.layout == InputSpec::Layout::kStrided) t = slice(t, 0, 0, base[0], 2);
    out.push_back(t);
  }
  return out;
}

}  // namespace kiln::testing
