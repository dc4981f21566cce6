// Bad llama2.c checkpoints: each gets a Status naming the file and the
// problem, and nothing is read out of bounds.
#include "models/llama2c_loader.h"

#include <cstring>
#include <fstream>
#include <vector>

#include "tests/test_util.h"

namespace kiln::models {
namespace {

using ::testing::HasSubstr;

const std::string kStories = std::string(KILN_SHARED_DIR) + "/models/stories260K.bin";

std::vector<char> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

std::string WriteTemp(const std::string& name, const std::vector<char>& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

void SetHeader(std::vector<char>& bytes, int field, int32_t value) {
  std::memcpy(bytes.data() + field * 4, &value, 4);
}

void ExpectInvalid(const std::string& path, absl::string_view problem) {
  absl::StatusOr<LoadedModel> m = LoadLlama2c(path);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
  EXPECT_THAT(m.status().message(), HasSubstr(path));
  EXPECT_THAT(m.status().message(), HasSubstr(problem));
}

TEST(Llama2cLoader, MissingFileIsNotFound) {
  absl::StatusOr<LoadedModel> m = LoadLlama2c("/nonexistent/stories.bin");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(), HasSubstr("/nonexistent/stories.bin"));
}

TEST(Llama2cLoader, EmptyFile) { ExpectInvalid(WriteTemp("empty.bin", {}), "truncated"); }

TEST(Llama2cLoader, HeaderOnlyPartlyPresent) {
  std::vector<char> bytes = ReadAll(kStories);
  bytes.resize(17);
  ExpectInvalid(WriteTemp("short_header.bin", bytes), "header");
}

TEST(Llama2cLoader, TruncatedWeights) {
  std::vector<char> bytes = ReadAll(kStories);
  for (size_t keep : {size_t{28}, size_t{1000}, bytes.size() - 4, bytes.size() - 1}) {
    std::vector<char> cut(bytes.begin(), bytes.begin() + keep);
    ExpectInvalid(WriteTemp("truncated.bin", cut), "truncated");
  }
}

TEST(Llama2cLoader, TrailingBytesMeanTheHeaderIsWrong) {
  std::vector<char> bytes = ReadAll(kStories);
  bytes.resize(bytes.size() + 8, 0);
  ExpectInvalid(WriteTemp("trailing.bin", bytes), "bytes");
}

TEST(Llama2cLoader, ImpossibleHeaderValues) {
  const std::vector<char> good = ReadAll(kStories);
  struct Case {
    int field;
    int32_t value;
    const char* problem;
  } cases[] = {
      {0, 0, "positive"},          {0, -64, "positive"},          {1, -1, "positive"},
      {2, 0, "positive"},          {3, 7, "multiple of n_heads"}, {4, 3, "multiple of n_kv_heads"},
      {5, INT32_MIN, "positive"},  {6, 0, "positive"},            {0, 1 << 30, "large"},
      {3, 64, "even"},
  };
  for (const Case& c : cases) {
    std::vector<char> bytes = good;
    SetHeader(bytes, c.field, c.value);
    ExpectInvalid(WriteTemp("bad_header.bin", bytes), c.problem);
  }
}

TEST(Llama2cLoader, HeaderThatDisagreesWithTheFileSize) {
  // A consistent-looking header whose weights would need more bytes.
  std::vector<char> bytes = ReadAll(kStories);
  SetHeader(bytes, 1, 256);  // hidden_dim
  ExpectInvalid(WriteTemp("inconsistent.bin", bytes), "needs");
  bytes = ReadAll(kStories);
  SetHeader(bytes, 5, -512);  // claims a separate classifier that is not there
  ExpectInvalid(WriteTemp("no_classifier.bin", bytes), "separate classifier");
}

TEST(Llama2cLoader, DirectoryIsRejected) {
  absl::StatusOr<LoadedModel> m = LoadLlama2c(::testing::TempDir());
  EXPECT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("regular file"));
}

}  // namespace
}  // namespace kiln::models
