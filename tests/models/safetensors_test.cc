#include "models/safetensors.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

using ::kiln::testing::ReadF32;
using ::kiln::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A fresh directory under the test temp dir.
std::string TestDir(const std::string& name) {
  return ::kiln::testing::FreshTempDir("kiln_safetensors_" + name);
}

// A file with the given header text (the length prefix computed) and data.
std::string RawFile(const std::string& name, const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  const std::string path = TestDir(name) + "/model.safetensors";
  WriteFile(path, bytes + header + data);
  return path;
}

// Opens `path`, expecting InvalidArgument naming the path and `problem`.
void ExpectOpenFails(const std::string& path, const std::string& problem) {
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << file.status();
  EXPECT_THAT(file.status().message(), HasSubstr(path));
  EXPECT_THAT(file.status().message(), HasSubstr(problem));
}

const std::string kEightFloats(32, '\0');

TEST(Safetensors, RoundTripF32) {
  const std::string path = TestDir("f32") + "/a.safetensors";
  KILN_EXPECT_OK(
      WriteSafetensors(path, {{"w", Tensor::FromHost<float>({1.5f, -2, 3, 4, 5, 6.25f}, {2, 3})},
                              {"b", Tensor::FromHost<float>({7, 8}, {2})}}));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(file->names(), ElementsAre("b", "w"));
  absl::StatusOr<Tensor> w = file->Get("w");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->dtype(), DType::kF32);
  EXPECT_EQ(w->shape(), (Shape{2, 3}));
  EXPECT_THAT(ReadF32(*w), ElementsAre(1.5f, -2, 3, 4, 5, 6.25f));
  absl::StatusOr<Tensor> b = file->Get("b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(ReadF32(*b), ElementsAre(7, 8));
}

TEST(Safetensors, RoundTripF16) {
  const std::string path = TestDir("f16") + "/a.safetensors";
  std::vector<Half> values;
  for (float v : {0.5f, -1.25f, 3.0f, 65504.0f}) values.push_back(Half::FromFloat(v));
  KILN_EXPECT_OK(WriteSafetensors(path, {{"h", Tensor::FromHost<Half>(values, {2, 1, 2})}}));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Tensor> h = file->Get("h");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->dtype(), DType::kF16);
  EXPECT_EQ(h->shape(), (Shape{2, 1, 2}));
  EXPECT_THAT(ReadF32(*h), ElementsAre(0.5f, -1.25f, 3.0f, 65504.0f));
}

TEST(Safetensors, RoundTripBF16) {
  const std::string path = TestDir("bf16") + "/a.safetensors";
  std::vector<BFloat16> values;
  for (float v : {1.0f, -0.375f, 256.0f}) values.push_back(BFloat16::FromFloat(v));
  KILN_EXPECT_OK(WriteSafetensors(path, {{"g", Tensor::FromHost<BFloat16>(values, {3})}}));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Tensor> g = file->Get("g");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->dtype(), DType::kBF16);
  EXPECT_EQ(g->shape(), (Shape{3}));
  EXPECT_THAT(ReadF32(*g), ElementsAre(1.0f, -0.375f, 256.0f));
}

TEST(Safetensors, RoundTripMixedDtypesScalarsEmptyAndMetadata) {
  const std::string path = TestDir("mixed") + "/a.safetensors";
  // An odd-sized f16 tensor written first must not misalign the f32 after it.
  const std::vector<Half> h = {Half::FromFloat(1), Half::FromFloat(2), Half::FromFloat(3)};
  KILN_EXPECT_OK(WriteSafetensors(path,
                                  {{"h", Tensor::FromHost<Half>(h, {3})},
                                   {"f", Tensor::FromHost<float>({9}, {})},
                                   {"i", Tensor::FromHost<int32_t>({-4, 5}, {2})},
                                   {"empty", Tensor::FromHost<float>({}, {0, 4})}},
                                  {{"format", "pt"}}));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_THAT(file->names(), ElementsAre("empty", "f", "h", "i"));
  for (const std::string& name : file->names()) {
    absl::StatusOr<Tensor> t = file->Get(name);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_FALSE(t->node()->data.storage->writable()) << name << " was copied";
  }
  EXPECT_THAT(ReadF32(*file->Get("f")), ElementsAre(9));
  EXPECT_THAT(ReadF32(*file->Get("h")), ElementsAre(1, 2, 3));
  EXPECT_EQ(file->Get("empty")->shape(), (Shape{0, 4}));
  absl::StatusOr<std::vector<int32_t>> i = file->Get("i")->to_host<int32_t>();
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_THAT(*i, ElementsAre(-4, 5));
}

TEST(Safetensors, WrapsInPlaceReadOnly) {
  const std::string path = TestDir("in_place") + "/a.safetensors";
  KILN_EXPECT_OK(WriteSafetensors(path, {{"w", Tensor::FromHost<float>({1, 2, 3, 4}, {4})}}));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Tensor> a = file->Get("w");
  absl::StatusOr<Tensor> b = file->Get("w");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->is_realized());
  EXPECT_FALSE(a->node()->data.storage->writable());
  // Both handles address the same mapped bytes: nothing was copied.
  EXPECT_EQ(a->node()->data.storage->data(), b->node()->data.storage->data());
}

TEST(Safetensors, TensorOutlivesFileObject) {
  const std::string path = TestDir("outlives") + "/a.safetensors";
  KILN_EXPECT_OK(WriteSafetensors(path, {{"w", Tensor::FromHost<float>({1, 2}, {2})}}));
  Tensor t;
  {
    absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    t = *file->Get("w");
  }
  EXPECT_THAT(ReadF32(t), ElementsAre(1, 2));
}

TEST(Safetensors, WritesNonContiguousTensorsInRowMajorOrder) {
  const std::string path = TestDir("strided") + "/a.safetensors";
  const Tensor x = Tensor::FromHost<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  KILN_EXPECT_OK(WriteSafetensors(path, {{"xt", transpose(x, 0, 1)}}));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Tensor> xt = file->Get("xt");
  ASSERT_TRUE(xt.ok()) << xt.status();
  EXPECT_EQ(xt->shape(), (Shape{3, 2}));
  EXPECT_THAT(ReadF32(*xt), ElementsAre(1, 4, 2, 5, 3, 6));
}

TEST(Safetensors, MisalignedTensorIsCopied) {
  // An odd header length puts the data at an odd offset in the file.
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  if (header.size() % 2 == 0) header += ' ';
  std::string data(8, '\0');
  const float values[2] = {2.5f, -1.0f};
  std::memcpy(data.data(), values, 8);
  const std::string path = RawFile("misaligned", header, data);
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Tensor> w = file->Get("w");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(ReadF32(*w), ElementsAre(2.5f, -1.0f));
  EXPECT_TRUE(w->node()->data.storage->writable()) << "expected a copy";
}

TEST(Safetensors, WriterRejectsDuplicateNames) {
  const std::string path = TestDir("dup_names") + "/a.safetensors";
  const Tensor t = Tensor::FromHost<float>({1}, {1});
  absl::Status s = WriteSafetensors(path, {{"a", t}, {"a", t}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("twice"));
}

TEST(Safetensors, WriterRejectsErrorTensors) {
  const std::string path = TestDir("error_tensor") + "/a.safetensors";
  absl::Status s = WriteSafetensors(
      path, {{"bad", Tensor::Error(absl::InvalidArgumentError("upstream failure"))}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("upstream failure"));
  EXPECT_THAT(s.message(), HasSubstr(path));
}

TEST(Safetensors, WriterReportsUnwritablePath) {
  const std::string path = TestDir("unwritable") + "/no/such/dir/a.safetensors";
  absl::Status s = WriteSafetensors(path, {{"w", Tensor::FromHost<float>({1}, {1})}});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("cannot open"));
}

TEST(Safetensors, MissingFile) {
  const std::string path = TestDir("missing_file") + "/nope.safetensors";
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), HasSubstr(path));
}

TEST(Safetensors, EmptyFile) {
  const std::string path = TestDir("empty") + "/model.safetensors";
  WriteFile(path, "");
  ExpectOpenFails(path, "8-byte header length");
}

TEST(Safetensors, FileShorterThanHeaderLength) {
  const std::string path = TestDir("short") + "/model.safetensors";
  WriteFile(path, std::string("\x02\x00\x00", 3));
  ExpectOpenFails(path, "3 bytes");
}

TEST(Safetensors, HeaderLengthPastTheEnd) {
  const std::string path = TestDir("long_header") + "/model.safetensors";
  WriteFile(path, std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10));
  ExpectOpenFails(path, "header length 255 runs past the end");
}

TEST(Safetensors, HugeHeaderLength) {
  const std::string path = TestDir("huge_header") + "/model.safetensors";
  WriteFile(path, std::string("\xff\xff\xff\xff\xff\xff\xff\xff{}", 10));
  ExpectOpenFails(path, "runs past the end");
}

TEST(Safetensors, MalformedJson) {
  ExpectOpenFails(RawFile("malformed", R"({"w": {"dtype": "F32",)", ""), "not well-formed JSON");
}

TEST(Safetensors, JsonNotAnObject) {
  ExpectOpenFails(RawFile("not_object", "[1, 2, 3]", ""), "not an object");
}

TEST(Safetensors, EntryNotAnObject) {
  ExpectOpenFails(RawFile("entry_not_object", R"({"w": 3})", ""), "'w'");
}

TEST(Safetensors, UnknownDtype) {
  const std::string path =
      RawFile("unknown_dtype", R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
              std::string(8, '\0'));
  ExpectOpenFails(path, "tensor 'w': dtype \"F64\" is not supported");
}

TEST(Safetensors, DtypeNotAString) {
  ExpectOpenFails(
      RawFile("dtype_type", R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", "abcd"),
      "\"dtype\" is not a string");
}

TEST(Safetensors, ShapeWrongType) {
  ExpectOpenFails(
      RawFile("shape_type", R"({"w":{"dtype":"F32","shape":"2x4","data_offsets":[0,32]}})",
              kEightFloats),
      "tensor 'w': \"shape\" is not an array");
}

TEST(Safetensors, ShapeNegativeEntry) {
  ExpectOpenFails(
      RawFile("shape_negative", R"({"w":{"dtype":"F32","shape":[-2,4],"data_offsets":[0,32]}})",
              kEightFloats),
      "not a non-negative integer");
}

TEST(Safetensors, ShapeFractionalEntry) {
  ExpectOpenFails(
      RawFile("shape_fraction", R"({"w":{"dtype":"F32","shape":[2.5,4],"data_offsets":[0,32]}})",
              kEightFloats),
      "not a non-negative integer");
}

TEST(Safetensors, RankTooLarge) {
  ExpectOpenFails(
      RawFile("rank", R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1],"data_offsets":[0,4]}})",
              "abcd"),
      "rank 7");
}

TEST(Safetensors, ShapeOverflows) {
  ExpectOpenFails(RawFile("overflow",
                          R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],)"
                          R"("data_offsets":[0,4]}})",
                          "abcd"),
                  "too large");
}

TEST(Safetensors, OffsetsWrongType) {
  ExpectOpenFails(
      RawFile("offsets_type", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "abcd"),
      "\"data_offsets\" is not an array of two offsets");
}

TEST(Safetensors, OffsetsPastTheEnd) {
  ExpectOpenFails(
      RawFile("offsets_past_end", R"({"w":{"dtype":"F32","shape":[16],"data_offsets":[0,64]}})",
              kEightFloats),
      "run past the end of the data (32 bytes)");
}

TEST(Safetensors, OffsetsReversed) {
  ExpectOpenFails(
      RawFile("offsets_reversed", R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})",
              kEightFloats),
      "end before they begin");
}

TEST(Safetensors, OffsetsDoNotMatchShape) {
  ExpectOpenFails(
      RawFile("offsets_shape", R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,32]}})",
              kEightFloats),
      "span 32 bytes, but F32[2,3] needs 24");
}

TEST(Safetensors, OverlappingTensors) {
  ExpectOpenFails(RawFile("overlap",
                          R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                          R"("b":{"dtype":"F32","shape":[4],"data_offsets":[12,28]}})",
                          kEightFloats),
                  "'a' [0, 16) and 'b' [12, 28) overlap");
}

TEST(Safetensors, MetadataNotStrings) {
  ExpectOpenFails(RawFile("metadata", R"({"__metadata__":{"version":2}})", ""),
                  "\"__metadata__\" value for 'version' is not a string");
}

TEST(Safetensors, BoolOutsideZeroOne) {
  const std::string path =
      RawFile("bool", R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})",
              std::string("\x01\x07", 2));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Tensor> m = file->Get("m");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr(path));
  EXPECT_THAT(m.status().message(), HasSubstr("BOOL element 1 is 7"));
}

TEST(Safetensors, MissingTensor) {
  const std::string path = TestDir("missing_tensor") + "/a.safetensors";
  KILN_EXPECT_OK(WriteSafetensors(path, {{"w", Tensor::FromHost<float>({1}, {1})}}));
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Tensor> t = file->Get("v");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), HasSubstr(path));
  EXPECT_THAT(t.status().message(), HasSubstr("'v'"));
}

TEST(Safetensors, CorruptedFilesNeverCrash) {
  const std::string dir = TestDir("corrupted");
  const std::string good = dir + "/good.safetensors";
  KILN_EXPECT_OK(WriteSafetensors(good,
                                  {{"a", Tensor::FromHost<float>({1, 2, 3}, {3})},
                                   {"b", Tensor::FromHost<int32_t>({4, 5}, {1, 2})}},
                                  {{"format", "pt"}}));
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::mt19937 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    std::string mutated = bytes;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      mutated[rng() % mutated.size()] = static_cast<char>(rng() % 256);
    }
    if (trial % 5 == 0) mutated.resize(rng() % mutated.size());
    const std::string path = dir + "/mutated.safetensors";
    WriteFile(path, mutated);
    absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
    if (!file.ok()) {
      EXPECT_THAT(file.status().message(), HasSubstr(path));
      continue;
    }
    for (const std::string& name : file->names()) {
      absl::StatusOr<Tensor> t = file->Get(name);
      if (!t.ok()) continue;
      // Touch every byte (under ASan this catches reads outside the map).
      std::vector<char> copy(t->shape().num_elements() * DTypeSize(t->dtype()));
      if (!copy.empty()) std::memcpy(copy.data(), t->node()->data.storage->data(), copy.size());
    }
  }
}

}  // namespace
}  // namespace kiln::models
