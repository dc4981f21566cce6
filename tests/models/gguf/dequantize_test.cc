#include "models/gguf/dequantize.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensor/half.h"

// gguf-py's dequantized values of raw blocks: dequant_<TYPE>.bin (blocks)
// and dequant_<TYPE>.f32 (little-endian float32), made by
// tests/models/references/make_references.py.
#ifndef KILN_GGUF_REFERENCE_DIR
#define KILN_GGUF_REFERENCE_DIR KILN_SOURCE_DIR "/tests/models/references/gguf"
#endif

namespace kiln::models {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::optional<GgmlType> TypeNamed(const std::string& name) {
  for (uint32_t n = 0; n < 64; ++n) {
    const GgmlTypeInfo* info = FindGgmlType(n);
    if (info != nullptr && name == info->name) return info->type;
  }
  return std::nullopt;
}

uint16_t F16Bits(float v) { return Half::FromFloat(v).bits; }

void PutF16(std::vector<uint8_t>& block, size_t at, float v) {
  const uint16_t bits = F16Bits(v);
  std::memcpy(block.data() + at, &bits, 2);
}

std::vector<float> Decode(GgmlType type, const std::vector<uint8_t>& bytes) {
  const GgmlTypeInfo& info = GgmlTypeInfoOf(type);
  std::vector<float> out(bytes.size() / info.block_bytes * info.block_size);
  const absl::Status s = Dequantize(type, bytes, absl::MakeSpan(out));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// The same bits, any NaN matching any NaN (numpy's NaN payloads depend on
// the CPU's conversion instructions).
::testing::AssertionResult SameBits(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  }
  int misses = 0;
  auto failure = ::testing::AssertionFailure();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i])) continue;
    if (++misses <= 5) failure << "\n  [" << i << "] " << got[i] << ", expected " << want[i];
  }
  if (misses == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << misses << " of " << got.size() << " differ";
}

TEST(Dequantize, MatchesGgufPyReferences) {
  const fs::path dir = KILN_GGUF_REFERENCE_DIR;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) GTEST_SKIP() << dir << " does not exist yet";
  int pairs = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("dequant_", 0) != 0 || entry.path().extension() != ".bin") continue;
    const std::string name = entry.path().stem().string().substr(8);
    SCOPED_TRACE(file);
    const std::optional<GgmlType> type = TypeNamed(name);
    ASSERT_TRUE(type.has_value()) << "'" << name << "' is no ggml type name";
    fs::path values_path = entry.path();
    values_path.replace_extension(".f32");
    ASSERT_TRUE(fs::exists(values_path)) << "no " << values_path;
    const std::string raw = ReadBytes(entry.path());
    const std::string values = ReadBytes(values_path);
    std::vector<float> want(values.size() / 4);
    std::memcpy(want.data(), values.data(), want.size() * 4);
    std::vector<float> got(want.size());
    const absl::Status s = Dequantize(
        *type, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()),
        absl::MakeSpan(got));
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_TRUE(SameBits(got, want));
    ++pairs;
  }
  EXPECT_GT(pairs, 0) << dir << " holds no dequant_<TYPE>.bin / .f32 pairs";
}

TEST(Dequantize, Q8_0IsScaleTimesSignedBytes) {
  std::vector<uint8_t> b(34);
  PutF16(b, 0, 0.5f);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  const std::vector<float> out = Decode(GgmlType::kQ8_0, b);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(out[j], 0.5f * (j - 16)) << j;
}

TEST(Dequantize, Q4_0AndQ4_1HoldLowNibblesFirst) {
  std::vector<uint8_t> b(18);
  PutF16(b, 0, 2.0f);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> out = Decode(GgmlType::kQ4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 2.0f * (j - 8)) << j;
    EXPECT_EQ(out[j + 16], 2.0f * (15 - j - 8)) << j;
  }
  std::vector<uint8_t> c(20);
  PutF16(c, 0, 1.0f);
  PutF16(c, 2, -4.0f);
  for (int j = 0; j < 16; ++j) c[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  out = Decode(GgmlType::kQ4_1, c);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], j - 4.0f) << j;
    EXPECT_EQ(out[j + 16], 15 - j - 4.0f) << j;
  }
}

TEST(Dequantize, Q5TakesTheFifthBitFromAWord) {
  const uint32_t qh = 0xAAAA5555u;  // bit j of element j
  std::vector<uint8_t> b(22);
  PutF16(b, 0, 1.0f);
  std::memcpy(b.data() + 2, &qh, 4);
  for (int j = 0; j < 16; ++j) b[6 + j] = static_cast<uint8_t>(j | (j << 4));
  std::vector<float> out = Decode(GgmlType::kQ5_0, b);
  for (int e = 0; e < 32; ++e) {
    const int q = (e % 16) | (((qh >> e) & 1) << 4);
    EXPECT_EQ(out[e], q - 16.0f) << e;
  }
  std::vector<uint8_t> c(24);
  PutF16(c, 0, 0.5f);
  PutF16(c, 2, 1.0f);
  std::memcpy(c.data() + 4, &qh, 4);
  for (int j = 0; j < 16; ++j) c[8 + j] = static_cast<uint8_t>(j | (j << 4));
  out = Decode(GgmlType::kQ5_1, c);
  for (int e = 0; e < 32; ++e) {
    const int q = (e % 16) | (((qh >> e) & 1) << 4);
    EXPECT_EQ(out[e], 0.5f * q + 1.0f) << e;
  }
}

// 0xE4 = 0b11'10'01'00: the 2-bit fields at shifts 0, 2, 4, 6 read 0, 1, 2, 3,
// so an element's value names which of the byte's runs it is in.
constexpr uint8_t kRuns = 0xE4;

TEST(Dequantize, Q2_KScalesSixteenSubBlocks) {
  std::vector<uint8_t> b(84, kRuns);
  for (int s = 0; s < 16; ++s) b[s] = static_cast<uint8_t>(s | (1 << 4));  // scale s, min 1
  PutF16(b, 80, 1.0f);
  PutF16(b, 82, 0.5f);
  const std::vector<float> out = Decode(GgmlType::kQ2_K, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(out[e], (e / 16) * ((e % 128) / 32) - 0.5f) << e;
}

TEST(Dequantize, Q3_KSubtractsFourWhereTheMaskBitIsClear) {
  std::vector<uint8_t> b(110, 0);
  for (int l = 0; l < 32; ++l) b[l] = 0x01;  // only the first run keeps its high bit
  for (int i = 0; i < 64; ++i) b[32 + i] = kRuns;
  for (int i = 0; i < 8; ++i) b[96 + i] = 0x11;   // low 4 bits of every scale: 1
  for (int i = 8; i < 12; ++i) b[96 + i] = 0xAA;  // high 2 bits: 2, so 33 - 32 = 1
  PutF16(b, 108, 1.0f);
  const std::vector<float> out = Decode(GgmlType::kQ3_K, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(out[e], (e % 128) / 32 - (e >= 32 ? 4 : 0)) << e;
}

// Q4_K / Q5_K scales: sub-block s has scale s + 1 and min 2, except that
// the top bits of byte 0 lift sub-block 4's scale by 16.
std::vector<uint8_t> KBlock(size_t bytes) {
  std::vector<uint8_t> b(bytes, 0);
  PutF16(b, 0, 1.0f);
  PutF16(b, 2, 1.0f);
  for (int s = 0; s < 4; ++s) {
    b[4 + s] = static_cast<uint8_t>(s + 1);
    b[8 + s] = 2;
    b[12 + s] = static_cast<uint8_t>((s + 5) | (2 << 4));
  }
  b[4] |= 0x40;
  return b;
}
int KScale(int s) { return s + 1 + (s == 4 ? 16 : 0); }

TEST(Dequantize, Q4_KUnpacksSixBitScalesAndMins) {
  std::vector<uint8_t> b = KBlock(144);
  for (int i = 0; i < 128; ++i) b[16 + i] = 0x21;  // low nibble 1, high nibble 2
  const std::vector<float> out = Decode(GgmlType::kQ4_K, b);
  for (int e = 0; e < 256; ++e) {
    const int q = (e % 64) < 32 ? 1 : 2;
    EXPECT_EQ(out[e], KScale(e / 32) * q - 2.0f) << e;
  }
}

TEST(Dequantize, Q5_KAddsTheHighBitOfEachRun) {
  std::vector<uint8_t> b = KBlock(176);
  for (int l = 0; l < 32; ++l) b[16 + l] = 0x02;  // the second run of 32 gets +16
  for (int i = 0; i < 128; ++i) b[48 + i] = 0x21;
  const std::vector<float> out = Decode(GgmlType::kQ5_K, b);
  for (int e = 0; e < 256; ++e) {
    const int q = ((e % 64) < 32 ? 1 : 2) + (e / 32 == 1 ? 16 : 0);
    EXPECT_EQ(out[e], KScale(e / 32) * q - 2.0f) << e;
  }
}

TEST(Dequantize, Q6_KCombinesNibblesAndTwoBitsWithSignedScales) {
  std::vector<uint8_t> b(210, 0);
  for (int i = 0; i < 128; ++i) b[i] = 0x21;
  for (int i = 0; i < 64; ++i) b[128 + i] = kRuns;
  for (int s = 0; s < 16; ++s)
    b[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(s % 2 ? -1 : 1));
  PutF16(b, 208, 0.25f);
  const std::vector<float> out = Decode(GgmlType::kQ6_K, b);
  for (int e = 0; e < 256; ++e) {
    const int low = (e % 128) < 64 ? 1 : 2;
    const int q = (low | (((e % 128) / 32) << 4)) - 32;
    const float scale = 0.25f * ((e / 16) % 2 ? -1.0f : 1.0f);
    EXPECT_EQ(out[e], scale * q) << e;
  }
}

TEST(Dequantize, PlainTypes) {
  const std::vector<float> values = {1.0f, -2.5f, 65504.0f, 0x1p-24f};
  std::vector<uint8_t> f32(16), f16(8), bf16(8);
  std::memcpy(f32.data(), values.data(), 16);
  for (int i = 0; i < 4; ++i) {
    const uint16_t h = F16Bits(values[i]);
    const uint16_t b = BFloat16::FromFloat(values[i]).bits;
    std::memcpy(f16.data() + 2 * i, &h, 2);
    std::memcpy(bf16.data() + 2 * i, &b, 2);
  }
  EXPECT_EQ(Decode(GgmlType::kF32, f32), values);
  EXPECT_EQ(Decode(GgmlType::kF16, f16), values);
  EXPECT_THAT(Decode(GgmlType::kBF16, bf16),
              ::testing::ElementsAre(1.0f, -2.5f, 65536.0f, 0x1p-24f));
}

TEST(Dequantize, NonFiniteScalesGiveNonFiniteValues) {
  std::vector<uint8_t> b(34, 1);
  b[2] = 0;  // 0 * inf is NaN
  const uint16_t inf = 0x7C00;
  std::memcpy(b.data(), &inf, 2);
  const std::vector<float> out = Decode(GgmlType::kQ8_0, b);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], std::numeric_limits<float>::infinity());
}

TEST(Dequantize, AcceptsRandomBytesOfEverySupportedType) {
  std::mt19937 rng(3);
  for (uint32_t n = 0; n < 64; ++n) {
    const GgmlTypeInfo* info = FindGgmlType(n);
    if (info == nullptr || !CanDequantize(info->type)) continue;
    std::vector<uint8_t> bytes(static_cast<size_t>(info->block_bytes) * 7);
    for (uint8_t& x : bytes) x = static_cast<uint8_t>(rng());
    std::vector<float> out(static_cast<size_t>(info->block_size) * 7);
    EXPECT_TRUE(Dequantize(info->type, bytes, absl::MakeSpan(out)).ok()) << info->name;
  }
}

TEST(Dequantize, RefusesTypesItDoesNotDecode) {
  for (GgmlType type :
       {GgmlType::kIQ2_XXS, GgmlType::kQ8_K, GgmlType::kTQ1_0, GgmlType::kI32, GgmlType::kMXFP4}) {
    const GgmlTypeInfo& info = GgmlTypeInfoOf(type);
    std::vector<uint8_t> bytes(static_cast<size_t>(info.block_bytes));
    std::vector<float> out(static_cast<size_t>(info.block_size));
    const absl::Status s = Dequantize(type, bytes, absl::MakeSpan(out));
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << info.name;
    EXPECT_THAT(std::string(s.message()), HasSubstr(info.name));
    EXPECT_FALSE(CanDequantize(type));
  }
}

TEST(Dequantize, RefusesSizesThatDisagree) {
  std::vector<uint8_t> bytes(34);
  std::vector<float> out(31);
  absl::Status s = Dequantize(GgmlType::kQ8_0, bytes, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("blocks of 32"));
  out.resize(64);
  s = Dequantize(GgmlType::kQ8_0, bytes, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("needs 68 bytes, got 34"));
}

TEST(GgmlTypes, TableHasLlamaCppsNamesAndSizes) {
  EXPECT_STREQ(FindGgmlType(12)->name, "Q4_K");
  EXPECT_EQ(FindGgmlType(12)->block_bytes, 144);
  EXPECT_EQ(FindGgmlType(14)->block_bytes, 210);
  EXPECT_STREQ(FindGgmlType(30)->name, "BF16");
  EXPECT_STREQ(FindGgmlType(39)->name, "MXFP4");
  EXPECT_EQ(FindGgmlType(4), nullptr);
  EXPECT_EQ(FindGgmlType(43), nullptr);
  EXPECT_EQ(GgmlTypeName(GgmlType::kQ6_K), "Q6_K");
  EXPECT_EQ(GgmlTypeName(33), "type 33 (Q4_0_8_8, no longer allowed in GGUF files)");
  EXPECT_EQ(GgmlTypeName(1000), "unknown type 1000");
  int known = 0;
  for (uint32_t n = 0; n < 64; ++n) known += FindGgmlType(n) != nullptr;
  EXPECT_EQ(known, 35);
  EXPECT_EQ(*GgmlBytes(GgmlType::kQ4_K, 512), 288u);
  EXPECT_EQ(*GgmlBytes(GgmlType::kF16, 3), 6u);
  EXPECT_FALSE(GgmlBytes(GgmlType::kQ4_K, 100).ok());
  EXPECT_FALSE(GgmlBytes(GgmlType::kF32, -1).ok());
  EXPECT_FALSE(GgmlBytes(GgmlType::kF64, int64_t{1} << 62).ok());
}

TEST(FloatsToHalf, RoundsToNearestEven) {
  const std::vector<float> in = {1.0f + 0x1p-11f,      // halfway: stays at even 1.0
                                 1.0f + 3 * 0x1p-11f,  // halfway: up to even
                                 65519.0f,
                                 65520.0f,  // below and at overflow
                                 0x1p-25f,
                                 0x1.8p-24f,  // subnormal halfways
                                 std::numeric_limits<float>::quiet_NaN(),
                                 -0.0f};
  std::vector<uint16_t> f16(in.size()), bf16(in.size());
  ASSERT_TRUE(FloatsToF16(in, absl::MakeSpan(f16)).ok());
  EXPECT_EQ(f16[0], 0x3C00);
  EXPECT_EQ(f16[1], 0x3C02);
  EXPECT_EQ(f16[2], 0x7BFF);
  EXPECT_EQ(f16[3], 0x7C00);
  EXPECT_EQ(f16[4], 0x0000);
  EXPECT_EQ(f16[5], 0x0002);
  EXPECT_EQ(f16[6] & 0x7C00, 0x7C00);
  EXPECT_NE(f16[6] & 0x03FF, 0);
  EXPECT_EQ(f16[7], 0x8000);
  ASSERT_TRUE(FloatsToBF16(in, absl::MakeSpan(bf16)).ok());
  EXPECT_EQ(bf16[0], 0x3F80);
  EXPECT_EQ(bf16[6] & 0x7FC0, 0x7FC0);
  std::vector<uint16_t> wrong(2);
  EXPECT_EQ(FloatsToF16(in, absl::MakeSpan(wrong)).code(), absl::StatusCode::kInvalidArgument);
}

// numpy's astype(float16) and gguf-py's BF16 quantize, where the reference
// folder has them (round_input.f32 with round_F16.bin / round_BF16.bin).
TEST(FloatsToHalf, MatchesNumpyWhereReferencesExist) {
  const fs::path dir = KILN_GGUF_REFERENCE_DIR;
  if (!fs::exists(dir / "round_input.f32")) GTEST_SKIP() << "no rounding references";
  const std::string raw = ReadBytes(dir / "round_input.f32");
  std::vector<float> in(raw.size() / 4);
  std::memcpy(in.data(), raw.data(), in.size() * 4);
  for (const char* name : {"round_F16.bin", "round_BF16.bin"}) {
    const std::string want = ReadBytes(dir / name);
    ASSERT_EQ(want.size(), in.size() * 2) << name;
    std::vector<uint16_t> got(in.size());
    const bool f16 = std::string(name) == "round_F16.bin";
    ASSERT_TRUE(
        (f16 ? FloatsToF16(in, absl::MakeSpan(got)) : FloatsToBF16(in, absl::MakeSpan(got))).ok());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0) << name;
  }
}

}  // namespace
}  // namespace kiln::models
