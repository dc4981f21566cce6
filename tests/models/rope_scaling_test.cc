#include "models/rope_scaling.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/hf_loader.h"
#include "nlohmann/json.hpp"

namespace kiln::models {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// rope.json: transformers 5.17's ROPE_INIT_FUNCTIONS on each scheme
// (tests/models/references/make_references.py).
json RopeReferences() {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/tests/models/references/rope.json");
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str(), nullptr, false);
}

TEST(RopeScaling, MatchesTransformersForEveryScheme) {
  const json refs = RopeReferences();
  ASSERT_TRUE(refs.is_object());
  ASSERT_GE(refs["cases"].size(), 20u);
  for (const json& c : refs["cases"]) {
    SCOPED_TRACE(c.dump().substr(0, 200));
    ASSERT_FALSE(c.contains("error")) << c["error"];
    const int head_dim = c["head_dim"];
    const json config = {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", head_dim * 4},
                         {"num_attention_heads", 4},              {"head_dim", head_dim},
                         {"intermediate_size", 64},               {"num_hidden_layers", 1},
                         {"vocab_size", 16},
                         {"max_position_embeddings", c["max_position_embeddings"]},
                         {"rope_parameters", c["rope_parameters"]}};
    absl::StatusOr<LlamaConfig> parsed = ParseHfConfig(config, "config.json");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<RopeFrequencies> f =
        ComputeRopeFrequencies(parsed->rope_theta, head_dim, parsed->rope_scaling);
    ASSERT_TRUE(f.ok()) << f.status();
    const std::vector<double> expected = c["inv_freq"];
    ASSERT_EQ(f->inv_freq.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      // transformers computes in float32.
      EXPECT_NEAR(f->inv_freq[i], expected[i], 2e-6 * expected[i] + 1e-12) << "pair " << i;
    }
    EXPECT_NEAR(f->attention_scale, c["attention_scale"].get<double>(), 1e-9);
  }
}

TEST(RopeScaling, DefaultIsPlainRope) {
  absl::StatusOr<RopeFrequencies> f = ComputeRopeFrequencies(10000, 8, {});
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(f->inv_freq, ::testing::ElementsAre(1.0, 0.1, ::testing::DoubleNear(0.01, 1e-15),
                                                  ::testing::DoubleNear(0.001, 1e-15)));
  EXPECT_EQ(f->attention_scale, 1.0);
}

TEST(RopeScaling, FactorsDivideEachPair) {
  RopeScaling s;
  s.type = RopeScaling::Type::kFactors;
  s.factors = {1, 2, 4, 8};
  absl::StatusOr<RopeFrequencies> f = ComputeRopeFrequencies(10000, 8, s);
  ASSERT_TRUE(f.ok());
  EXPECT_DOUBLE_EQ(f->inv_freq[3], 0.001 / 8);
  s.factors = {1, 2};
  EXPECT_THAT(ComputeRopeFrequencies(10000, 8, s).status().message(), HasSubstr("2 frequency factors"));
  s.factors = {1, 2, 0, 8};
  EXPECT_THAT(ComputeRopeFrequencies(10000, 8, s).status().message(), HasSubstr("not positive"));
}

TEST(RopeScaling, BadParametersAreErrors) {
  RopeScaling s;
  s.type = RopeScaling::Type::kLinear;
  s.factor = 0.5;
  EXPECT_THAT(ComputeRopeFrequencies(10000, 8, s).status().message(), HasSubstr("\"factor\""));
  s.type = RopeScaling::Type::kLlama3;
  s.factor = 8;
  EXPECT_THAT(ComputeRopeFrequencies(10000, 8, s).status().message(),
              HasSubstr("original_max_position_embeddings"));
  s.original_max_position_embeddings = 8192;
  s.low_freq_factor = 4;
  s.high_freq_factor = 1;
  EXPECT_THAT(ComputeRopeFrequencies(10000, 8, s).status().message(), HasSubstr("low_freq_factor"));
  EXPECT_FALSE(ComputeRopeFrequencies(10000, 7, {}).ok());
  EXPECT_FALSE(ComputeRopeFrequencies(0.5, 8, {}).ok());
  EXPECT_EQ(RopeScaling{}.ToString(), "none");
}

}  // namespace
}  // namespace kiln::models
