// dequantize and QuantizeOnHost on the CPU executor. The decode is checked
// against gguf-py's values (the references dequantize_test.cc reads); the
// encoders against blocks worked out by hand from gguf-py's quantize_blocks
// rules (Q8_0: scale max|x| / 127, round half away from zero; Q4_0: scale
// (value of largest magnitude) / -8, truncate x / d + 8.5, clip to 0..15).
#include "ops/quant.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "tensor/half.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kReferences = fs::path(KILN_SOURCE_DIR) / "tests/models/references/gguf";

std::vector<char> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Tensor Packed(const std::vector<uint8_t>& bytes, int64_t rows) {
  return Tensor::FromHost<uint8_t>(bytes, {rows, static_cast<int64_t>(bytes.size()) / rows});
}

uint16_t F16Bits(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return bits;
}

class DequantizeReference : public ::testing::TestWithParam<QuantFormat> {};

// The op decodes gguf-py's random blocks to gguf-py's values, bit for bit,
// and rounds them to bf16 as a source does.
TEST_P(DequantizeReference, MatchesGgufPyBitForBit) {
  const QuantFormatInfo& info = QuantInfo(GetParam());
  const std::vector<char> raw = ReadFile(kReferences / absl::StrCat("dequant_", info.name, ".bin"));
  const std::vector<char> want_raw = ReadFile(kReferences / absl::StrCat("dequant_", info.name, ".f32"));
  ASSERT_FALSE(raw.empty());
  ASSERT_EQ(raw.size() % info.block_bytes, 0u);
  const int64_t blocks = static_cast<int64_t>(raw.size()) / info.block_bytes;
  ASSERT_EQ(want_raw.size(), static_cast<size_t>(blocks * info.block_size) * 4);
  std::vector<float> want(want_raw.size() / 4);
  std::memcpy(want.data(), want_raw.data(), want_raw.size());
  // Rows of one block where the count allows more than one row.
  const int64_t rows = blocks % 2 == 0 ? 2 : 1;
  const std::vector<uint8_t> bytes(raw.begin(), raw.end());
  Tensor values = dequantize(Packed(bytes, rows), info.format);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values.shape(), (Shape{rows, blocks / rows * info.block_size}));
  absl::StatusOr<std::vector<float>> got = values.to_host<float>();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan((*got)[i])) << i;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>((*got)[i]), std::bit_cast<uint32_t>(want[i])) << info.name << " value " << i;
    }
  }
  absl::StatusOr<std::vector<float>> rounded =
      (dequantize(Packed(bytes, rows), info.format, DType::kBF16) * 1.0f).to_host<float>();
  ASSERT_TRUE(rounded.ok()) << rounded.status();
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) continue;
    ASSERT_EQ((*rounded)[i], BFloat16::FromFloat(want[i]).ToFloat()) << info.name << " value " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, DequantizeReference,
                         ::testing::Values(QuantFormat::kQ8_0, QuantFormat::kQ4_0, QuantFormat::kQ4_1,
                                           QuantFormat::kQ5_0, QuantFormat::kQ5_1, QuantFormat::kQ2_K,
                                           QuantFormat::kQ3_K, QuantFormat::kQ4_K, QuantFormat::kQ5_K,
                                           QuantFormat::kQ6_K),
                         [](const auto& info) { return std::string(QuantName(info.param)); });

TEST(Dequantize, ReadsAViewOfRows) {
  // Two rows of one Q8_0 block each; the second row read alone through a slice.
  std::vector<uint8_t> bytes(68, 0);
  const uint16_t one = Half::FromFloat(1.0f).bits, half = Half::FromFloat(0.5f).bits;
  std::memcpy(bytes.data(), &one, 2);
  std::memcpy(bytes.data() + 34, &half, 2);
  for (int j = 0; j < 32; ++j) {
    bytes[2 + j] = static_cast<uint8_t>(j);
    bytes[36 + j] = static_cast<uint8_t>(static_cast<int8_t>(-j));
  }
  absl::StatusOr<std::vector<float>> got = dequantize(slice(Packed(bytes, 2), 0, 1, 2), QuantFormat::kQ8_0).to_host<float>();
  ASSERT_TRUE(got.ok()) << got.status();
  for (int j = 0; j < 32; ++j) EXPECT_EQ((*got)[j], -0.5f * j) << j;
}

TEST(Dequantize, RefusesWhatIsNotWholeBlocksOfBytes) {
  const Tensor floats = Tensor::FromHost<float>(std::vector<float>(34, 0.0f), {1, 34});
  EXPECT_THAT(dequantize(floats, QuantFormat::kQ8_0).status().message(), HasSubstr("u8 rows"));
  const Tensor partial = Tensor::FromHost<uint8_t>(std::vector<uint8_t>(35, 0), {1, 35});
  EXPECT_THAT(dequantize(partial, QuantFormat::kQ8_0).status().message(), HasSubstr("whole Q8_0 blocks of 34"));
  const Tensor bytes = Tensor::FromHost<uint8_t>(std::vector<uint8_t>(34, 0), {1, 34});
  EXPECT_THAT(dequantize(bytes, QuantFormat::kQ8_0, DType::kI32).status().message(), HasSubstr("not i32"));
  EXPECT_EQ(dequantize(bytes, QuantFormat::kQ4_K).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(QuantFormat, ParsesEitherCaseAndAgreesWithGgufSizes) {
  EXPECT_EQ(ParseQuantFormat("q8_0"), QuantFormat::kQ8_0);
  EXPECT_EQ(ParseQuantFormat("Q6_K"), QuantFormat::kQ6_K);
  EXPECT_EQ(ParseQuantFormat("q8"), std::nullopt);
  EXPECT_EQ(QuantInfo(QuantFormat::kQ4_K).block_bytes, 144);
  EXPECT_EQ(QuantInfo(QuantFormat::kQ6_K).block_size, 256);
}

std::vector<uint8_t> Encode(QuantFormat format, const std::vector<float>& x) {
  const QuantFormatInfo& info = QuantInfo(format);
  std::vector<uint8_t> out(x.size() / info.block_size * info.block_bytes);
  const absl::Status s = EncodeQuantBlocks(format, x, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(EncodeQ8_0, ScalesByTheLargestMagnitudeAndRoundsHalfAwayFromZero) {
  // max |x| = 127: d = 1, and x * (1 / d) = x, so the rounding shows bare.
  std::vector<float> x(32, 0.0f);
  x[0] = 127;
  x[1] = 2.5f;    // 3, where round-half-even would give 2
  x[2] = -2.5f;   // -3
  x[3] = 0.5f;    // 1
  x[4] = -0.5f;   // -1
  x[5] = 1.49f;   // 1
  x[6] = -126.5f; // -127
  const std::vector<uint8_t> b = Encode(QuantFormat::kQ8_0, x);
  EXPECT_EQ(F16Bits(b.data()), 0x3C00);  // 1.0
  const int want[] = {127, 3, -3, 1, -1, 1, -127, 0};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(static_cast<int8_t>(b[2 + j]), want[j]) << j;
}

TEST(EncodeQ8_0, AZeroBlockHasScaleAndValuesZero) {
  const std::vector<uint8_t> b = Encode(QuantFormat::kQ8_0, std::vector<float>(64, 0.0f));
  for (uint8_t v : b) EXPECT_EQ(v, 0);
}

TEST(EncodeQ4_0, ScalesByTheSignedLargestValueOverMinusEight) {
  std::vector<float> x(32, 0.0f);
  // The first value of largest magnitude is -8: d = 1, id = 1, q = trunc(x + 8.5).
  x[0] = -8;
  x[1] = 8;      // trunc(16.5) = 16, clipped to 15
  x[2] = 7;      // 15
  x[3] = -0.5f;  // trunc(8.0) = 8
  x[4] = -0.51f; // 7
  x[5] = 0.5f;   // 9
  x[16] = 3;     // 11, the high nibble of byte 0
  const std::vector<uint8_t> b = Encode(QuantFormat::kQ4_0, x);
  EXPECT_EQ(F16Bits(b.data()), 0x3C00);  // d = -8 / -8 = 1
  EXPECT_EQ(b[2], 0 | (11 << 4));
  EXPECT_EQ(b[3], 15 | (8 << 4));  // x[17] = 0: 8
  EXPECT_EQ(b[4] & 0x0F, 15);
  EXPECT_EQ(b[5] & 0x0F, 8);
  EXPECT_EQ(b[6] & 0x0F, 7);
  EXPECT_EQ(b[7] & 0x0F, 9);
  // Largest magnitude positive: d = 8 / -8 = -1, so q = trunc(8.5 - x).
  std::vector<float> y(32, 0.0f);
  y[0] = 8;
  y[1] = -3;  // 11
  const std::vector<uint8_t> c = Encode(QuantFormat::kQ4_0, y);
  EXPECT_EQ(F16Bits(c.data()), 0xBC00);  // -1.0
  EXPECT_EQ(c[2] & 0x0F, 0);
  EXPECT_EQ(c[3] & 0x0F, 11);
}

TEST(EncodeQuantBlocks, RoundTripsWithinTheFormatsStep) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(32 * 41);
  for (float& v : x) v = normal(rng);
  for (QuantFormat format : {QuantFormat::kQ8_0, QuantFormat::kQ4_0}) {
    const std::vector<uint8_t> b = Encode(format, x);
    std::vector<float> back(x.size());
    DecodeQuantBlocks(format, b.data(), static_cast<int64_t>(x.size() / 32), back.data());
    for (size_t blk = 0; blk < x.size() / 32; ++blk) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
      // Half a step, and the f16 rounding of the scale across the range. Q4_0
      // reaches 8 steps on the side of its largest value but 7 on the other,
      // so a value there near -max loses up to a whole step.
      const float bound = format == QuantFormat::kQ8_0 ? amax / 127 * 0.5f : amax / 8;
      for (int j = 0; j < 32; ++j) {
        ASSERT_NEAR(back[blk * 32 + j], x[blk * 32 + j], bound + amax * 2e-3f)
            << QuantName(format) << " block " << blk << " value " << j;
      }
    }
  }
}

TEST(EncodeQ4_K, DecodesEachValueWithinHalfItsSubBlocksStep) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(256 * 9);
  for (float& v : x) v = normal(rng);
  // A sub-block of one sign, a sub-block that is constant, and one of zeros:
  // their offsets and steps are at the edges of the fit.
  for (int i = 0; i < 32; ++i) x[32 + i] = 0.03f + 0.001f * static_cast<float>(i);
  for (int i = 0; i < 32; ++i) x[64 + i] = -0.05f;
  for (int i = 0; i < 32; ++i) x[96 + i] = 0.0f;
  const std::vector<uint8_t> b = Encode(QuantFormat::kQ4_K, x);
  std::vector<float> back(x.size());
  DecodeQuantBlocks(QuantFormat::kQ4_K, b.data(), static_cast<int64_t>(x.size() / 256), back.data());
  for (size_t blk = 0; blk < x.size() / 256; ++blk) {
    float lo[8] = {}, hi[8] = {};  // each sub-block's range, 0 included
    float max_step = 0, max_offset = 0;
    for (int s = 0; s < 8; ++s) {
      for (int i = 0; i < 32; ++i) {
        lo[s] = std::min(lo[s], x[blk * 256 + s * 32 + i]);
        hi[s] = std::max(hi[s], x[blk * 256 + s * 32 + i]);
      }
      max_step = std::max(max_step, (hi[s] - lo[s]) / 15);
      max_offset = std::max(max_offset, -lo[s]);
    }
    for (int s = 0; s < 8; ++s) {
      // Half the sub-block's step, which is a 6-bit multiple of the block's
      // largest step / 63, plus half of the offset's own unit.
      const float bound =
          0.5f * ((hi[s] - lo[s]) / 15 + max_step / 63) + 0.5f * max_offset / 63 + 1e-3f * max_step;
      for (int i = 0; i < 32; ++i) {
        const size_t e = blk * 256 + s * 32 + i;
        ASSERT_NEAR(back[e], x[e], bound) << "block " << blk << " sub-block " << s << " value " << i;
      }
    }
  }
  for (int i = 0; i < 32; ++i) EXPECT_EQ(back[96 + i], 0.0f) << i;
  const std::vector<uint8_t> zeros = Encode(QuantFormat::kQ4_K, std::vector<float>(256, 0.0f));
  for (uint8_t v : zeros) EXPECT_EQ(v, 0);
}

TEST(EncodeQuantBlocks, RefusesNonFiniteValuesWrongSizesAndOtherKQuants) {
  std::vector<float> x(32, 1.0f);
  std::vector<uint8_t> out(34);
  x[5] = std::nanf("");
  EXPECT_THAT(EncodeQuantBlocks(QuantFormat::kQ8_0, x, absl::MakeSpan(out)).message(), HasSubstr("value 5"));
  x[5] = 1;
  std::vector<uint8_t> short_out(33);
  EXPECT_EQ(EncodeQuantBlocks(QuantFormat::kQ8_0, x, absl::MakeSpan(short_out)).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> k(210);
  EXPECT_EQ(EncodeQuantBlocks(QuantFormat::kQ6_K, std::vector<float>(256, 1.0f), absl::MakeSpan(k)).code(),
            absl::StatusCode::kUnimplemented);
  std::vector<uint8_t> k4(144);
  EXPECT_EQ(EncodeQuantBlocks(QuantFormat::kQ4_K, std::vector<float>(32, 1.0f), absl::MakeSpan(k4)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(QuantizeOnHost, PacksRowsTheOpDecodes) {
  std::vector<float> x(3 * 64);
  // Integers in [-8, 7], each block led by -8: d = 1 and they come back exactly.
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 32 == 0 ? -8.0f : static_cast<float>(static_cast<int>(i % 16) - 8);
  absl::StatusOr<Tensor> packed = QuantizeOnHost(x, {3, 64}, QuantFormat::kQ4_0);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(packed->shape(), (Shape{3, 36}));
  EXPECT_EQ(packed->dtype(), DType::kU8);
  absl::StatusOr<std::vector<float>> back = dequantize(*packed, QuantFormat::kQ4_0).to_host<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ((*back)[i], x[i]) << i;
  EXPECT_FALSE(QuantizeOnHost(x, {3, 63}, QuantFormat::kQ8_0).ok());
  EXPECT_FALSE(QuantizeOnHost(x, {6, 32, 1}, QuantFormat::kQ8_0).ok());
}

}  // namespace
}  // namespace kiln
