#include "models/gguf/gguf_file.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/models/gguf/gguf_builder.h"

namespace kiln::models {
namespace {

using ::kiln::models::testing::ArrayOf;
using ::kiln::models::testing::F32Bytes;
using ::kiln::models::testing::GgufBuilder;
using ::kiln::models::testing::Le;
using ::kiln::models::testing::Str;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

absl::StatusOr<GgufFile> Parse(const std::string& bytes) {
  return GgufFile::FromBytes(bytes, "test.gguf");
}

// Parsing fails with `code` and a message naming the file and containing
// every one of `parts`.
void ExpectError(const std::string& bytes, absl::StatusCode code,
                 const std::vector<std::string>& parts) {
  absl::StatusOr<GgufFile> f = Parse(bytes);
  ASSERT_FALSE(f.ok()) << "parsed a bad file";
  EXPECT_EQ(f.status().code(), code) << f.status();
  EXPECT_THAT(Message(f.status()), HasSubstr("test.gguf"));
  for (const std::string& p : parts) EXPECT_THAT(Message(f.status()), HasSubstr(p));
}

void ExpectInvalid(const std::string& bytes, const std::vector<std::string>& parts) {
  ExpectError(bytes, absl::StatusCode::kInvalidArgument, parts);
}

// A file with every kind of metadata value and three tensors.
GgufBuilder EverythingBuilder() {
  GgufBuilder b;
  b.String("general.architecture", "llama");
  b.Add("u8", GgufType::kU8, Le<uint8_t>(200));
  b.Add("i8", GgufType::kI8, Le<int8_t>(-100));
  b.Add("u16", GgufType::kU16, Le<uint16_t>(60000));
  b.Add("i16", GgufType::kI16, Le<int16_t>(-30000));
  b.U32("u32", 4000000000u);
  b.I32("i32", -2000000000);
  b.U64("u64", std::numeric_limits<uint64_t>::max());
  b.Add("i64", GgufType::kI64, Le<int64_t>(-(int64_t{1} << 62)));
  b.F32("f32", 1.5f);
  b.Add("f64", GgufType::kF64, Le<double>(0.1));
  b.Bool("bool", true);
  b.String("string", "h\xc3\xa9llo\n");
  b.Strings("strings", {"<unk>", "", "abc"});
  b.F32s("f32s", {1.0f, -2.5f});
  b.I32s("i32s", {7, -8, 9});
  b.Add("empty", GgufType::kArray, ArrayOf(GgufType::kU64, 0, ""));
  b.Add("bools", GgufType::kArray, ArrayOf(GgufType::kBool, 3, std::string("\x01\x00\x01", 3)));
  const std::string inner1 = ArrayOf(GgufType::kI32, 2, Le<int32_t>(1) + Le<int32_t>(2));
  const std::string inner2 = ArrayOf(GgufType::kString, 1, Str("x"));
  b.Add("nested", GgufType::kArray, ArrayOf(GgufType::kArray, 2, inner1 + inner2));
  b.Tensor("a", {4, 2}, GgmlType::kF32, F32Bytes({1, 2, 3, 4, 5, 6, 7, 8}));
  b.Tensor("b", {32}, GgmlType::kQ8_0, std::string(34, '\x01'));
  b.Tensor("c", {3}, GgmlType::kF16, std::string(6, '\x02'));
  return b;
}

TEST(GgufFile, ParsesEveryMetadataType) {
  absl::StatusOr<GgufFile> f = Parse(EverythingBuilder().Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->metadata().size(), 19u);
  EXPECT_EQ(f->metadata()[0].key, "general.architecture");
  EXPECT_EQ(*f->GetString("general.architecture"), "llama");
  EXPECT_EQ(*f->Find("u8")->AsInt(), 200);
  EXPECT_EQ(*f->Find("i8")->AsInt(), -100);
  EXPECT_EQ(*f->Find("u16")->AsInt(), 60000);
  EXPECT_EQ(*f->Find("i16")->AsInt(), -30000);
  EXPECT_EQ(*f->Find("u32")->AsUint(), 4000000000u);
  EXPECT_EQ(*f->Find("i32")->AsInt(), -2000000000);
  EXPECT_EQ(*f->Find("u64")->AsUint(), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(f->Find("u64")->AsInt().has_value());  // does not fit
  EXPECT_EQ(*f->Find("i64")->AsInt(), -(int64_t{1} << 62));
  EXPECT_EQ(*f->Find("f32")->AsDouble(), 1.5);
  EXPECT_EQ(*f->Find("f64")->AsDouble(), 0.1);
  EXPECT_EQ(*f->Find("bool")->AsBool(), true);
  EXPECT_EQ(*f->Find("string")->AsString(), "h\xc3\xa9llo\n");
  EXPECT_EQ(f->Find("string")->type(), GgufType::kString);
  EXPECT_FALSE(f->Find("string")->AsInt().has_value());
  EXPECT_EQ(f->Find("nope"), nullptr);

  const GgufValue* strings = f->Find("strings");
  ASSERT_TRUE(strings->is_array());
  EXPECT_EQ(strings->element_type(), GgufType::kString);
  EXPECT_THAT(strings->strings(), ElementsAre("<unk>", "", "abc"));
  EXPECT_EQ(*strings->Element(2).AsString(), "abc");
  EXPECT_EQ(*f->Find("f32s")->Element(1).AsDouble(), -2.5);
  EXPECT_EQ(*f->Find("i32s")->Element(1).AsInt(), -8);
  EXPECT_EQ(f->Find("empty")->size(), 0u);
  EXPECT_EQ(f->Find("empty")->element_type(), GgufType::kU64);
  EXPECT_EQ(*f->Find("bools")->Element(1).AsBool(), false);

  const GgufValue* nested = f->Find("nested");
  ASSERT_EQ(nested->arrays().size(), 2u);
  EXPECT_EQ(*nested->arrays()[0].Element(1).AsInt(), 2);
  EXPECT_EQ(*nested->Element(1).Element(0).AsString(), "x");
}

TEST(GgufFile, DescribesValues) {
  absl::StatusOr<GgufFile> f = Parse(EverythingBuilder().Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->Find("u32")->ToString(), "u32 4000000000");
  EXPECT_EQ(f->Find("i8")->ToString(), "i8 -100");
  EXPECT_EQ(f->Find("f32")->ToString(), "f32 1.5");
  EXPECT_EQ(f->Find("bool")->ToString(), "bool true");
  EXPECT_EQ(f->Find("string")->ToString(), "string \"h\\xc3\\xa9llo\\n\"");
  EXPECT_EQ(f->Find("strings")->ToString(), "array of 3 string [\"<unk>\", \"\", \"abc\"]");
  EXPECT_EQ(f->Find("i32s")->ToString(2), "array of 3 i32 [7, -8, ...]");
  EXPECT_EQ(f->Find("nested")->ToString(),
            "array of 2 array [array of 2 i32 [1, 2], array of 1 string [\"x\"]]");
  EXPECT_EQ(f->Find("empty")->ToString(), "array of 0 u64 []");
}

TEST(GgufFile, ReadsTensorInfosAndData) {
  absl::StatusOr<GgufFile> f = Parse(EverythingBuilder().Build());
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  const GgufTensorInfo* a = f->FindTensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, GgmlType::kF32);
  EXPECT_THAT(a->dims, ElementsAre(4, 2));
  EXPECT_THAT(a->shape(), ElementsAre(2, 4));
  EXPECT_EQ(a->elements(), 8);
  EXPECT_EQ(a->row_length(), 4);
  EXPECT_EQ(a->bytes, 32u);
  EXPECT_EQ(a->Describe(), "F32 [4, 2]");
  const absl::Span<const uint8_t> data = f->TensorData(*a);
  ASSERT_EQ(data.size(), 32u);
  float last;
  std::memcpy(&last, data.data() + 28, 4);
  EXPECT_EQ(last, 8.0f);
  const GgufTensorInfo* b = f->FindTensor("b");
  EXPECT_EQ(b->offset, 32u);
  EXPECT_EQ(b->bytes, 34u);
  EXPECT_EQ(f->FindTensor("c")->offset, 96u);
  EXPECT_EQ(f->FindTensor("c")->bytes, 6u);
  EXPECT_EQ(f->FindTensor("d"), nullptr);
}

TEST(GgufFile, ReadsVersion2AndAnotherAlignment) {
  GgufBuilder b;
  b.version = 2;
  b.alignment = 64;
  b.U32("general.alignment", 64);
  b.Tensor("x", {16}, GgmlType::kF32, F32Bytes(std::vector<float>(16, 1.0f)));
  b.Tensor("y", {2}, GgmlType::kF32, F32Bytes({2, 3}));
  absl::StatusOr<GgufFile> f = Parse(b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->FindTensor("y")->offset, 64u);
}

TEST(GgufFile, AcceptsAFileWithNothingInIt) {
  GgufBuilder b;
  absl::StatusOr<GgufFile> f = Parse(b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->metadata().empty());
  EXPECT_TRUE(f->tensors().empty());
}

TEST(GgufFile, OpensAFileOnDisk) {
  const std::string path = ::testing::TempDir() + "/kiln_gguf_open.gguf";
  {
    std::ofstream out(path, std::ios::binary);
    const std::string bytes = EverythingBuilder().Build();
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  absl::StatusOr<GgufFile> f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->tensors().size(), 3u);
  absl::StatusOr<GgufFile> missing = GgufFile::Open(path + ".nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(GgufFile, TypedGettersConvertIntegersAndNameTheKey) {
  GgufBuilder b;
  b.Add("small", GgufType::kU8, Le<uint8_t>(7));
  b.I32("negative", -1);
  b.U64("big", uint64_t{1} << 40);
  b.Add("f64", GgufType::kF64, Le<double>(1e-6));
  b.String("name", "x");
  b.Strings("list", {"a", "b"});
  b.F32s("floats", {0.5f});
  b.I32s("ints", {1, 2});
  absl::StatusOr<GgufFile> f = Parse(b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f->GetU32("small"), 7u);
  EXPECT_EQ(*f->GetInt("negative"), -1);
  EXPECT_EQ(*f->GetU64("big"), uint64_t{1} << 40);
  EXPECT_EQ(*f->GetF32("small"), 7.0f);
  EXPECT_EQ(*f->GetF32("f64"), 1e-6f);
  EXPECT_EQ(*f->GetF64("f64"), 1e-6);
  EXPECT_THAT(*f->GetStringArray("list"), ElementsAre("a", "b"));
  EXPECT_THAT(*f->GetF32Array("floats"), ElementsAre(0.5f));
  EXPECT_THAT(*f->GetIntArray("ints"), ElementsAre(1, 2));

  const auto expect_wrong = [&](const absl::Status& s, const std::string& key,
                                const std::string& what) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(Message(s), AllOf(HasSubstr("test.gguf"), HasSubstr("\"" + key + "\""),
                                  HasSubstr("at byte"), HasSubstr(what)));
  };
  expect_wrong(f->GetU32("negative").status(), "negative", "i32 -1");
  expect_wrong(f->GetU32("big").status(), "big", "2^32");
  expect_wrong(f->GetU64("negative").status(), "negative", "non-negative");
  expect_wrong(f->GetString("small").status(), "small", "not a string");
  expect_wrong(f->GetInt("name").status(), "name", "not an integer");
  expect_wrong(f->GetF32("name").status(), "name", "not a number");
  expect_wrong(f->GetBool("small").status(), "small", "not a bool");
  expect_wrong(f->GetStringArray("ints").status(), "ints", "not an array of strings");
  expect_wrong(f->GetF32Array("list").status(), "list", "not an array of f32");
  expect_wrong(f->GetIntArray("floats").status(), "floats", "not an array of integers");
  const absl::Status missing = f->GetU32("general.nothing").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(missing), HasSubstr("general.nothing"));
}

// ------------------------------------------------------------- the header

std::string Header(uint32_t version, uint64_t tensors, uint64_t entries) {
  return "GGUF" + Le(version) + Le(tensors) + Le(entries);
}

TEST(GgufFile, RefusesWhatIsNotGguf) {
  ExpectInvalid("", {"not a GGUF file"});
  ExpectInvalid("GG", {"not a GGUF file", "\"GG\""});
  ExpectInvalid("GGML" + Le<uint32_t>(3), {"not a GGUF file", "\"GGML\""});
  ExpectInvalid("\x89PNG\r\n", {"not a GGUF file"});
}

TEST(GgufFile, RefusesVersion1BigEndianAndFutureVersions) {
  ExpectError(Header(1, 0, 0), absl::StatusCode::kUnimplemented, {"version 1", "2 and 3"});
  ExpectError(Header(0x03000000, 0, 0), absl::StatusCode::kUnimplemented, {"big-endian"});
  ExpectError(Header(0x02000000, 0, 0), absl::StatusCode::kUnimplemented, {"big-endian"});
  ExpectError("FUGG" + Le<uint32_t>(0x03000000), absl::StatusCode::kUnimplemented,
              {"big-endian", "FUGG"});
  ExpectError(Header(4, 0, 0), absl::StatusCode::kUnimplemented, {"version 4"});
  ExpectInvalid(Header(0, 0, 0), {"version field 0"});
  ExpectInvalid(Header(0xdeadbeef, 0, 0), {"not a GGUF version"});
}

TEST(GgufFile, RefusesCountsThatCannotFit) {
  ExpectInvalid(Header(3, uint64_t{1} << 60, 0), {"tensor count 1152921504606846976"});
  ExpectInvalid(Header(3, 0, ~uint64_t{0}), {"metadata count 18446744073709551615"});
  ExpectInvalid(Header(3, 1, 1) + std::string(30, '\0'), {"metadata count 1", "cannot fit"});
}

// Every prefix of a valid file is an error naming where it ends; none crash.
TEST(GgufFile, EveryTruncationIsAnError) {
  const std::string full = EverythingBuilder().Build();
  ASSERT_TRUE(Parse(full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    absl::StatusOr<GgufFile> f = Parse(full.substr(0, n));
    ASSERT_FALSE(f.ok()) << "a prefix of " << n << " bytes parsed";
    ASSERT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << f.status();
    ASSERT_THAT(Message(f.status()), AllOf(HasSubstr("test.gguf"), HasSubstr("at byte")));
  }
  // The message says what was being read.
  ExpectInvalid(Header(3, 0, 1) + Str("key.with.long.name") + Le<uint32_t>(4) + "\x01\x02",
                {"the file ends inside the u32 value of \"key.with.long.name\"", "4 bytes needed",
                 "2 left", "at byte 54"});
}

// ------------------------------------------------------------- metadata

std::string OneEntry(const std::string& entry) { return Header(3, 0, 1) + entry; }

TEST(GgufFile, RefusesAbsurdLengths) {
  ExpectInvalid(OneEntry(Le<uint64_t>(~uint64_t{0}) + "key" + std::string(8, 'x')),
                {"claims 18446744073709551615"});
  ExpectInvalid(OneEntry(Str("k") + Le<uint32_t>(8) + Le<uint64_t>(1u << 30) + "abc"),
                {"the value of \"k\"", "claims 1073741824"});
  ExpectInvalid(
      OneEntry(Str("k") + Le<uint32_t>(9) + ArrayOf(GgufType::kU32, uint64_t{1} << 62, "")),
      {"the array \"k\"", "cannot fit"});
  ExpectInvalid(OneEntry(Str("k") + Le<uint32_t>(9) +
                         ArrayOf(GgufType::kString, uint64_t{1} << 40, Str("a"))),
                {"cannot fit"});
  ExpectInvalid(OneEntry(Str("k") + Le<uint32_t>(9) +
                         ArrayOf(GgufType::kString, 2, Str("a") + Le<uint64_t>(100) + "b")),
                {"element 1 of the array \"k\"", "claims 100"});
  ExpectInvalid(
      OneEntry(Str("k") + Le<uint32_t>(9) + ArrayOf(GgufType::kArray, uint64_t{1} << 50, "")),
      {"cannot fit"});
}

TEST(GgufFile, RefusesUnknownValueTypes) {
  ExpectInvalid(OneEntry(Str("k") + Le<uint32_t>(13) + "x"), {"\"k\"", "value type 13"});
  ExpectInvalid(OneEntry(Str("k") + Le<uint32_t>(9) + ArrayOf(static_cast<GgufType>(77), 0, "")),
                {"element type 77"});
}

TEST(GgufFile, RefusesDuplicateAndEmptyKeys) {
  GgufBuilder b;
  b.U32("general.x", 1).String("general.x", "again");
  ExpectInvalid(b.Build(), {"\"general.x\" appears twice"});
  ExpectInvalid(OneEntry(Str("") + Le<uint32_t>(0) + "xx"), {"empty key"});
}

TEST(GgufFile, RefusesBoolsThatAreNeitherZeroNorOne) {
  ExpectInvalid(OneEntry(Str("flag") + Le<uint32_t>(7) + "\x02"), {"\"flag\"", "bool value 2"});
  ExpectInvalid(OneEntry(Str("flags") + Le<uint32_t>(9) + ArrayOf(GgufType::kBool, 2, "\x01\x05")),
                {"bool element 1 is 5"});
}

TEST(GgufFile, BoundsNestedArrays) {
  std::string value = ArrayOf(GgufType::kU8, 0, "");
  for (int i = 0; i < 12; ++i) value = ArrayOf(GgufType::kArray, 1, value);
  ExpectInvalid(OneEntry(Str("deep") + Le<uint32_t>(9) + value), {"\"deep\"", "nests arrays"});
  // Seven levels are fine.
  std::string ok = ArrayOf(GgufType::kU8, 1, "\x05");
  for (int i = 0; i < 6; ++i) ok = ArrayOf(GgufType::kArray, 1, ok);
  absl::StatusOr<GgufFile> f = Parse(OneEntry(Str("deep") + Le<uint32_t>(9) + ok));
  ASSERT_TRUE(f.ok()) << f.status();
}

TEST(GgufFile, RefusesBadAlignments) {
  for (uint32_t a : {0u, 3u, 48u}) {
    GgufBuilder b;
    b.U32("general.alignment", a);
    ExpectInvalid(b.Build(), {"general.alignment", "power of two"});
  }
  GgufBuilder s;
  s.String("general.alignment", "32");
  ExpectInvalid(s.Build(), {"general.alignment", "string"});
}

// ------------------------------------------------------------- tensors

TEST(GgufFile, RefusesBadTensorShapes) {
  {
    GgufBuilder b;
    b.Tensor("t", {1, 1, 1, 1, 1}, GgmlType::kF32, F32Bytes({1}));
    ExpectInvalid(b.Build(), {"tensor \"t\"", "5 dimensions"});
  }
  {
    GgufBuilder b;
    b.Tensor("t", {uint64_t{1} << 40, uint64_t{1} << 40}, GgmlType::kF32, "");
    ExpectInvalid(b.Build(), {"tensor \"t\"", "overflow"});
  }
  {
    GgufBuilder b;
    b.Tensor("t", {~uint64_t{0}}, GgmlType::kF32, "");
    ExpectInvalid(b.Build(), {"tensor \"t\"", "overflow"});
  }
  {
    GgufBuilder b;
    b.Tensor("t", {uint64_t{1} << 62}, GgmlType::kF32, "");  // bytes overflow
    ExpectInvalid(b.Build(), {"tensor \"t\"", "overflow"});
  }
  {
    GgufBuilder b;
    b.Tensor("q", {16, 2}, GgmlType::kQ4_0, std::string(36, '\0'));
    ExpectInvalid(b.Build(), {"tensor \"q\"", "rows of 16", "Q4_0's block of 32"});
  }
}

TEST(GgufFile, NamesUnknownTensorTypes) {
  GgufBuilder b;
  b.Tensor("w", {4}, GgmlType::kF32, F32Bytes({1, 2, 3, 4}));
  b.tensors()[0].type = 99;
  ExpectInvalid(b.Build(), {"tensor \"w\"", "unknown type 99"});
  b.tensors()[0].type = 31;
  ExpectInvalid(b.Build(), {"tensor \"w\"", "type 31 (Q4_0_4_4"});
}

TEST(GgufFile, KnowsEveryGgmlType) {
  // IQ and other types kiln cannot decode still parse, with their sizes.
  GgufBuilder b;
  b.Tensor("iq", {256, 2}, GgmlType::kIQ2_XXS, std::string(2 * 66, '\0'));
  b.Tensor("mx", {64}, GgmlType::kMXFP4, std::string(2 * 17, '\0'));
  absl::StatusOr<GgufFile> f = Parse(b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->FindTensor("iq")->bytes, 132u);
  EXPECT_EQ(f->FindTensor("iq")->Describe(), "IQ2_XXS [256, 2]");
}

TEST(GgufFile, RefusesDuplicateAndEmptyTensorNames) {
  GgufBuilder b;
  b.Tensor("t", {1}, GgmlType::kF32, F32Bytes({1}));
  b.Tensor("t", {1}, GgmlType::kF32, F32Bytes({2}));
  ExpectInvalid(b.Build(), {"tensor \"t\" appears twice"});
  GgufBuilder e;
  e.Tensor("", {1}, GgmlType::kF32, F32Bytes({1}));
  ExpectInvalid(e.Build(), {"empty name"});
}

TEST(GgufFile, RefusesMisalignedOutOfRangeAndOverlappingTensors) {
  {
    GgufBuilder b;
    b.Tensor("t", {1}, GgmlType::kF32, F32Bytes({1}), /*offset=*/4);
    ExpectInvalid(b.Build(), {"tensor \"t\"", "offset 4", "alignment 32"});
  }
  {
    GgufBuilder b;
    b.Tensor("t", {4}, GgmlType::kF32, F32Bytes({1, 2, 3, 4}));
    b.Tensor("far", {1}, GgmlType::kF32, "", /*offset=*/uint64_t{1} << 40);
    ExpectInvalid(b.Build(), {"tensor \"far\"", "runs past the end"});
  }
  {
    GgufBuilder b;
    b.Tensor("t", {4}, GgmlType::kF32, F32Bytes({1, 2, 3, 4}));
    b.Tensor("u", {64}, GgmlType::kF32, "", /*offset=*/~uint64_t{31});
    ExpectInvalid(b.Build(), {"tensor \"u\"", "runs past the end"});
  }
  {
    GgufBuilder b;
    b.Tensor("a", {16}, GgmlType::kF32, F32Bytes(std::vector<float>(16, 1.0f)));
    b.Tensor("b", {8}, GgmlType::kF32, F32Bytes(std::vector<float>(8, 2.0f)), /*offset=*/32);
    ExpectInvalid(b.Build(), {"\"a\" [0, 64)", "\"b\" [32, 64)", "overlap"});
  }
}

TEST(GgufFile, AcceptsEmptyTensorsAnywhereInTheData) {
  GgufBuilder b;
  b.Tensor("a", {4}, GgmlType::kF32, F32Bytes({1, 2, 3, 4}));
  b.Tensor("empty", {0, 5}, GgmlType::kQ4_K, "", /*offset=*/0);
  absl::StatusOr<GgufFile> f = Parse(b.Build());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->FindTensor("empty")->bytes, 0u);
  EXPECT_TRUE(f->TensorData(*f->FindTensor("empty")).empty());
}

// Random corruptions of a valid file parse or fail cleanly (the fuzzer does
// this at length; this keeps a little of it in the unit tests).
TEST(GgufFile, SurvivesCorruptBytes) {
  const std::string full = EverythingBuilder().Build();
  std::mt19937 rng(42);
  int failed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = full;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int j = 0; j < flips; ++j) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    absl::StatusOr<GgufFile> f = Parse(bytes);
    if (!f.ok()) {
      ++failed;
      continue;
    }
    for (const GgufKeyValue& kv : f->metadata()) (void)kv.value.ToString();
    for (const GgufTensorInfo& t : f->tensors()) {
      const absl::Span<const uint8_t> data = f->TensorData(t);
      ASSERT_EQ(data.size(), t.bytes);
    }
  }
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace kiln::models
