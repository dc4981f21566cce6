#include "models/generate.h"

#include <fstream>
#include <sstream>

#include "models/load_model.h"
#include "tests/test_util.h"

namespace kiln::models {
namespace {

using ::testing::HasSubstr;

const std::string kModels = std::string(KILN_SHARED_DIR) + "/models";

struct Stories {
  LlamaModel model;
  LoadedTokenizer tokenizer;
};

Stories LoadStories() {
  absl::StatusOr<LlamaModel> model = LoadModel(kModels + "/stories260K.bin");
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<LoadedTokenizer> tokenizer =
      LoadTokenizerFor(kModels + "/stories260K.bin", kModels + "/tok512.bin", 512);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return Stories{*std::move(model), *std::move(tokenizer)};
}

std::string Golden() {
  std::ifstream in(kModels + "/stories260K.golden.txt", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Generate, GreedyStories260KPrintsTheGoldenText) {
  Stories s = LoadStories();
  GenerateOptions options;
  options.prompt = "Once upon a time";
  options.steps = 64;
  options.sampling.temperature = 0;
  std::string text;
  absl::StatusOr<GenerateStats> stats = Generate(
      s.model, s.tokenizer, options, [&](absl::string_view piece) { text.append(piece.data(), piece.size()); });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(text, Golden());
  EXPECT_EQ(stats->prompt_tokens, 5);
  EXPECT_EQ(stats->generated_tokens, 60);
}

TEST(Generate, SameSeedSameTextDifferentSeedDifferentText) {
  Stories s = LoadStories();
  GenerateOptions options;
  options.prompt = "Once upon a time";
  options.steps = 48;
  options.sampling.temperature = 1.0f;
  options.sampling.top_p = 0.9f;
  const auto run = [&](uint64_t seed) {
    options.sampling.seed = seed;
    std::string text;
    EXPECT_TRUE(Generate(s.model, s.tokenizer, options,
                         [&](absl::string_view p) { text.append(p.data(), p.size()); })
                    .ok());
    return text;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(Generate, RejectsAPromptLongerThanTheContext) {
  Stories s = LoadStories();
  GenerateOptions options;
  for (int i = 0; i < 600; ++i) options.prompt += "a b ";
  options.steps = 512;
  absl::StatusOr<GenerateStats> stats =
      Generate(s.model, s.tokenizer, options, [](absl::string_view) {});
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(stats.status().message(), HasSubstr("context"));
}

TEST(Generate, RejectsStepsOutsideTheContext) {
  Stories s = LoadStories();
  GenerateOptions options;
  options.prompt = "Hi";
  for (int steps : {0, -3, 513}) {
    options.steps = steps;
    EXPECT_EQ(Generate(s.model, s.tokenizer, options, [](absl::string_view) {}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << steps;
  }
}

TEST(LoadModel, NamesMissingPaths) {
  absl::StatusOr<LlamaModel> model = LoadModel("/nonexistent/model.bin");
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(), HasSubstr("/nonexistent/model.bin"));
  absl::StatusOr<LoadedTokenizer> tokenizer = LoadTokenizerFor("/nonexistent/model.bin", "", 512);
  EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(tokenizer.status().message(), HasSubstr("--tokenizer"));
}

}  // namespace
}  // namespace kiln::models
