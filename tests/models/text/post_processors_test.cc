#include "models/text/post_processors.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/models/text/hf_test_util.h"

namespace kiln::models {
namespace {

using ::kiln::models::testing::Build;
using ::kiln::models::testing::Ids;
using ::kiln::models::testing::TinyJson;
using ::testing::ElementsAre;

// Tokens: a=0, <s>=1, </s>=2.
std::unique_ptr<HfTokenizer> WithProcessor(const nlohmann::json& processor) {
  nlohmann::json root = TinyJson({"a", "<s>", "</s>"});
  root["post_processor"] = processor;
  return Build(root);
}

const nlohmann::json kSpecialTokens = {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}},
                                       {"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}}}};

TEST(PostProcessors, TemplateAroundTheText) {
  const nlohmann::json processor = {{"type", "TemplateProcessing"},
                                    {"single",
                                     {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                      {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                      {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
                                    {"pair", nlohmann::json::array()},
                                    {"special_tokens", kSpecialTokens}};
  const auto t = WithProcessor(processor);
  EXPECT_THAT(Ids(*t, "aa", true), ElementsAre(1, 0, 0, 2));
  EXPECT_THAT(Ids(*t, "aa", false), ElementsAre(0, 0));
  EXPECT_THAT(Ids(*t, "", true), ElementsAre(1, 2));
}

TEST(PostProcessors, TemplateInTheStringForm) {
  const auto t = WithProcessor(
      {{"type", "TemplateProcessing"}, {"single", "<s> $A"}, {"special_tokens", kSpecialTokens}});
  EXPECT_THAT(Ids(*t, "a", true), ElementsAre(1, 0));
}

TEST(PostProcessors, TemplateSpecialTokenOfSeveralIds) {
  const nlohmann::json specials = {{"[X]", {{"id", "[X]"}, {"ids", {2, 1}}, {"tokens", {"</s>", "<s>"}}}}};
  const auto t =
      WithProcessor({{"type", "TemplateProcessing"}, {"single", "$A [X]"}, {"special_tokens", specials}});
  EXPECT_THAT(Ids(*t, "a", true), ElementsAre(0, 2, 1));
}

TEST(PostProcessors, BertAndRoberta) {
  for (const char* type : {"BertProcessing", "RobertaProcessing"}) {
    const auto t = WithProcessor({{"type", type}, {"cls", {"<s>", 1}}, {"sep", {"</s>", 2}}});
    EXPECT_THAT(Ids(*t, "a", true), ElementsAre(1, 0, 2)) << type;
    EXPECT_THAT(Ids(*t, "a", false), ElementsAre(0)) << type;
  }
}

TEST(PostProcessors, SequenceAsLlama3Writes) {
  const nlohmann::json processor = {
      {"type", "Sequence"},
      {"processors",
       {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}},
        {{"type", "TemplateProcessing"}, {"single", "<s> $A:0"}, {"special_tokens", kSpecialTokens}}}}};
  const auto t = WithProcessor(processor);
  EXPECT_THAT(Ids(*t, "a", true), ElementsAre(1, 0));
  EXPECT_THAT(Ids(*t, "a", false), ElementsAre(0));
}

}  // namespace
}  // namespace kiln::models
