// The SentencePiece-style BPE tokenizer.json files of Llama 2, Mistral and
// TinyLlama, in both layouts transformers writes: the older one (Prepend and
// Replace normalizers, no pre-tokenizer) and the newer one (a Metaspace
// pre-tokenizer with prepend_scheme "first").
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/text/hf_tokenizer.h"
#include "tests/models/text/hf_test_util.h"

namespace kiln::models {
namespace {

using ::kiln::models::testing::Build;
using ::kiln::models::testing::Ids;
using ::testing::ElementsAre;

// <unk>=0 <s>=1 </s>=2 <0xC3>=3 <0xA9>=4 ▁=5 h=6 i=7 ▁h=8 ▁hi=9 <0x0A>=10
nlohmann::json SentencePieceJson(bool metaspace) {
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>",    "<0xC3>",   "<0xA9>", "\u2581",
                                           "h",     "i",   "\u2581h", "\u2581hi", "<0x0A>"};
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  nlohmann::json added = nlohmann::json::array();
  for (int i = 0; i < 3; ++i) {
    added.push_back({{"id", i},
                     {"content", tokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  nlohmann::json root = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", nlohmann::json::array()},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", "<unk>"},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"vocab", vocab},
        {"merges", {"\u2581 h", "\u2581h i"}}}}};
  if (metaspace) {
    root["normalizer"] = nullptr;
    root["pre_tokenizer"] = {
        {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}};
  } else {
    root["normalizer"] = {{"type", "Sequence"},
                          {"normalizers",
                           {{{"type", "Prepend"}, {"prepend", "\u2581"}},
                            {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
    root["pre_tokenizer"] = nullptr;
  }
  return root;
}

TEST(HfTokenizerSentencePiece, EncodesWithBosMergesAndByteFallback) {
  for (const bool metaspace : {false, true}) {
    const auto t = Build(SentencePieceJson(metaspace));
    ASSERT_NE(t, nullptr);
    EXPECT_THAT(Ids(*t, "hi hi\u00e9"), ElementsAre(1, 9, 9, 3, 4)) << metaspace;
    EXPECT_THAT(Ids(*t, "hi", false), ElementsAre(9)) << metaspace;
    EXPECT_THAT(Ids(*t, "hi\n"), ElementsAre(1, 9, 10)) << metaspace;
    // x and y have no token and no byte token: one fused <unk>.
    EXPECT_THAT(Ids(*t, "hxy"), ElementsAre(1, 8, 0)) << metaspace;
  }
}

TEST(HfTokenizerSentencePiece, TextAfterASpecialTokenGetsNoMetaspaceInTheNewLayout) {
  // The older layout prepends ▁ to every piece between added tokens; the
  // newer one only to the piece that starts the text.
  EXPECT_THAT(Ids(*Build(SentencePieceJson(false)), "</s>hi", false), ElementsAre(2, 9));
  EXPECT_THAT(Ids(*Build(SentencePieceJson(true)), "</s>hi", false), ElementsAre(2, 6, 7));
}

TEST(HfTokenizerSentencePiece, DecodesAsLlama2) {
  const auto t = Build(SentencePieceJson(false));
  const std::vector<int32_t> ids = Ids(*t, "hi hi\u00e9");
  EXPECT_EQ(*t->Decode(ids, false), "<s> hi hi\u00e9");
  EXPECT_EQ(*t->Decode(ids, true), "hi hi\u00e9");
  EXPECT_EQ(*t->Decode({9, 3}, true), "hi\uFFFD");  // a byte run ending inside a character
  EXPECT_EQ(*t->DecodeBytes({9, 3}, true), "hi\xC3");
}

}  // namespace
}  // namespace kiln::models
