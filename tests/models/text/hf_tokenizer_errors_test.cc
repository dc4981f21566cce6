// Every way a tokenizer.json can be wrong gives an error naming the file and
// the JSON path, never a crash.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/text/hf_tokenizer.h"
#include "tests/models/text/hf_test_util.h"

namespace kiln::models {
namespace {

using ::kiln::models::testing::TinyJson;
using ::testing::HasSubstr;

absl::Status LoadError(const nlohmann::json& root) {
  absl::StatusOr<std::unique_ptr<HfTokenizer>> t = HfTokenizer::FromJson(root, "tok.json");
  return t.ok() ? absl::OkStatus() : t.status();
}

void ExpectInvalid(const nlohmann::json& root, const std::string& message) {
  const absl::Status s = LoadError(root);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("tok.json: "));
  EXPECT_THAT(s.message(), HasSubstr(message));
}

void ExpectUnsupported(const nlohmann::json& root, const std::string& message) {
  const absl::Status s = LoadError(root);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr(message));
}

nlohmann::json With(const char* key, nlohmann::json value) {
  nlohmann::json root = TinyJson({"a", "b", "ab"});
  root[key] = std::move(value);
  return root;
}

nlohmann::json WithModel(const char* key, nlohmann::json value) {
  nlohmann::json root = TinyJson({"a", "b", "ab"});
  root["model"][key] = std::move(value);
  return root;
}

TEST(HfTokenizerErrors, TheRootAndTheModel) {
  ExpectInvalid(nlohmann::json::array(), "the root is [], not an object");
  ExpectInvalid(nlohmann::json::object(), "model is missing");
  ExpectInvalid(With("model", "BPE"), "model is \"BPE\", not an object");
  ExpectInvalid(WithModel("type", 3), "model.type is 3, not a string");
  ExpectInvalid(WithModel("vocab", nullptr), "model.vocab is missing");
  ExpectInvalid(WithModel("merges", "a b"), "model.merges is \"a b\", not an array");
}

TEST(HfTokenizerErrors, OtherModelTypesAreUnimplemented) {
  for (const char* type : {"WordPiece", "Unigram", "WordLevel"}) {
    ExpectUnsupported(WithModel("type", type),
                      std::string("tok.json: model.type \"") + type + "\" is not supported");
  }
}

TEST(HfTokenizerErrors, VocabularyIds) {
  ExpectInvalid(WithModel("vocab", {{"a", "0"}}), "model.vocab[\"a\"] is \"0\", not an id");
  ExpectInvalid(WithModel("vocab", {{"a", -1}}), "model.vocab[\"a\"] is -1");
  ExpectInvalid(WithModel("vocab", {{"a", 1.5}}), "model.vocab[\"a\"] is 1.5");
  ExpectInvalid(WithModel("vocab", {{"a", 1e30}}), "model.vocab[\"a\"]");
  ExpectInvalid(WithModel("vocab", {{"a", 4294967296ull}}), "model.vocab[\"a\"]");
  // Far more ids than tokens would make an absurd table.
  ExpectInvalid(WithModel("vocab", {{"a", 2000000000}}), "model.vocab[\"a\"]");
  ExpectInvalid(WithModel("vocab", {{"a", 0}, {"b", 0}}), "model.vocab gives id 0 to two tokens");
  ExpectInvalid(WithModel("vocab", nlohmann::json::object()), "is empty");
}

TEST(HfTokenizerErrors, Merges) {
  ExpectInvalid(WithModel("merges", {"a c"}), "model.merges[0] names \"c\", which is not in the vocabulary");
  ExpectInvalid(WithModel("merges", {"a b", "b a"}),
                "model.merges[1] makes \"ba\", which is not in the vocabulary");
  ExpectInvalid(WithModel("merges", {"ab"}), "model.merges[0] is not two tokens joined by one space");
  ExpectInvalid(WithModel("merges", {7}), "model.merges[0] is not an [\"a\", \"b\"] pair");
  ExpectInvalid(WithModel("merges", nlohmann::json::array({nlohmann::json::array({"a"})})),
                "model.merges[0] is not an [\"a\", \"b\"] pair");
  // tokenizers takes all strings or all pairs, not a mix.
  ExpectInvalid(WithModel("merges", nlohmann::json::array({"a b", nlohmann::json::array({"a", "b"})})),
                "model.merges[1] is not an \"a b\" string like the first merge");
  // A token holding a space cannot be told apart in the string form.
  ExpectInvalid(WithModel("merges", {"a b c"}), "model.merges[0] is not two tokens joined by one space");
}

TEST(HfTokenizerErrors, ModelOptions) {
  ExpectUnsupported(WithModel("dropout", 0.1), "model.dropout is 0.1: BPE dropout");
  ExpectInvalid(WithModel("dropout", 2), "model.dropout is 2, outside [0, 1]");
  ExpectInvalid(WithModel("dropout", "0"), "model.dropout is not a number");
  ExpectInvalid(WithModel("unk_token", "<unk>"), "model.unk_token \"<unk>\" is not in the vocabulary");
  ExpectInvalid(WithModel("unk_token", 0), "model.unk_token is 0, not a string");
  ExpectInvalid(WithModel("byte_fallback", "yes"), "model.byte_fallback is \"yes\", not true or false");
  ExpectInvalid(WithModel("continuing_subword_prefix", 1), "model.continuing_subword_prefix is 1");
  nlohmann::json prefixed = WithModel("continuing_subword_prefix", "##");
  prefixed["model"]["merges"] = {"a b"};
  ExpectInvalid(prefixed,
                "model.merges[0] has a second token that does not start with the continuing_subword_prefix");
}

TEST(HfTokenizerErrors, UnknownComponentTypesAreUnimplemented) {
  ExpectUnsupported(
      With("pre_tokenizer", {{"type", "Sequence"},
                             {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "BertPreTokenizer"}}}}}),
      "tok.json: pre_tokenizer.pretokenizers[1].type \"BertPreTokenizer\" is not supported");
  ExpectUnsupported(With("normalizer", {{"type", "BertNormalizer"}}), "normalizer.type \"BertNormalizer\"");
  ExpectUnsupported(With("normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "Precompiled"}}}}}),
                    "normalizer.normalizers[0].type \"Precompiled\"");
  ExpectUnsupported(With("decoder", {{"type", "WordPiece"}}), "decoder.type \"WordPiece\"");
  ExpectUnsupported(With("post_processor", {{"type", "Foo"}}), "post_processor.type \"Foo\"");
}

TEST(HfTokenizerErrors, ComponentFields) {
  ExpectInvalid(
      With("pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "(a"}}}, {"behavior", "Isolated"}}),
      "pre_tokenizer.pattern.Regex pattern does not compile");
  ExpectInvalid(
      With("pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}}),
      "pre_tokenizer.behavior \"Sideways\" is not a split behavior");
  ExpectInvalid(
      With("pre_tokenizer",
           {{"type", "Split"}, {"pattern", {{"Regex", "a"}, {"String", "a"}}}, {"behavior", "Isolated"}}),
      "pre_tokenizer.pattern needs exactly one of");
  ExpectInvalid(With("pre_tokenizer", {{"type", "Split"}, {"behavior", "Isolated"}}),
                "pre_tokenizer.pattern is missing");
  ExpectInvalid(With("pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "ab"}}),
                "pre_tokenizer.replacement is \"ab\", not a single character");
  ExpectInvalid(With("pre_tokenizer", {{"type", "Metaspace"},
                                       {"replacement", "_"},
                                       {"prepend_scheme", "always"},
                                       {"add_prefix_space", false}}),
                "pre_tokenizer.add_prefix_space is false, which contradicts prepend_scheme");
  ExpectInvalid(
      With("pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "sometimes"}}),
      "pre_tokenizer.prepend_scheme \"sometimes\"");
  ExpectInvalid(With("pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", 5}}),
                "pre_tokenizer.pretokenizers is 5, not an array");
  ExpectInvalid(With("pre_tokenizer", {{"kind", "Split"}}), "pre_tokenizer.type is missing");
  ExpectInvalid(With("normalizer", {{"type", "Replace"}, {"pattern", {{"String", "a"}}}}),
                "normalizer.content is missing");
  ExpectInvalid(With("decoder", {{"type", "Strip"}, {"content", " "}, {"start", -1}}), "decoder.start is -1");
  ExpectInvalid(With("decoder", {{"type", "Strip"}, {"content", ""}, {"start", 1}}),
                "decoder.content is \"\"");
}

TEST(HfTokenizerErrors, DeepNestingIsRefused) {
  nlohmann::json normalizer = {{"type", "Lowercase"}};
  for (int i = 0; i < 40; ++i) normalizer = {{"type", "Sequence"}, {"normalizers", {normalizer}}};
  ExpectInvalid(With("normalizer", normalizer), "nests deeper than");
}

TEST(HfTokenizerErrors, AddedTokens) {
  ExpectInvalid(With("added_tokens", {{"content", "x"}}), "added_tokens is {");
  ExpectInvalid(With("added_tokens", nlohmann::json::array({{{"id", 3}}})),
                "added_tokens[0].content is missing");
  ExpectInvalid(With("added_tokens", nlohmann::json::array({{{"id", 3}, {"content", 5}}})),
                "added_tokens[0].content is 5, not a string");
  ExpectInvalid(With("added_tokens", nlohmann::json::array({{{"id", -3}, {"content", "x"}}})),
                "added_tokens[0].id is -3");
  ExpectInvalid(
      With("added_tokens", nlohmann::json::array({{{"id", 3}, {"content", "x"}, {"special", "no"}}})),
      "added_tokens[0].special is \"no\"");
}

TEST(HfTokenizerErrors, PostProcessorIds) {
  const nlohmann::json specials = {{"<s>", {{"id", "<s>"}, {"ids", {99}}, {"tokens", {"<s>"}}}}};
  ExpectInvalid(With("post_processor",
                     {{"type", "TemplateProcessing"}, {"single", "<s> $A"}, {"special_tokens", specials}}),
                "post_processor.special_tokens[\"<s>\"].ids[0] is 99, not an id in [0, 3)");
  ExpectInvalid(With("post_processor", {{"type", "TemplateProcessing"},
                                        {"single", "<t> $A"},
                                        {"special_tokens", nlohmann::json::object()}}),
                "names \"<t>\", missing from special_tokens");
  ExpectInvalid(With("post_processor", {{"type", "TemplateProcessing"}, {"single", "$B"}}), "has only $A");
  ExpectInvalid(
      With("post_processor", {{"type", "BertProcessing"}, {"cls", {"<s>", 7}}, {"sep", {"</s>", 1}}}),
      "post_processor.cls[1] is 7");
  const nlohmann::json uneven = {{"<s>", {{"id", "<s>"}, {"ids", {0, 1}}, {"tokens", {"a"}}}}};
  ExpectInvalid(With("post_processor",
                     {{"type", "TemplateProcessing"}, {"single", "<s> $A"}, {"special_tokens", uneven}}),
                "ids and tokens of different lengths");
}

TEST(HfTokenizerErrors, InvalidUtf8InASynthesizedJson) {
  // A json built in memory (from a GGUF file, say) can hold any bytes.
  ExpectInvalid(With("normalizer", {{"type", "Prepend"}, {"prepend", "\xFF"}}),
                "normalizer.prepend is not valid UTF-8");
  ExpectInvalid(
      With("pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "\xC3"}}}, {"behavior", "Isolated"}}),
      "pre_tokenizer.pattern.Regex is not valid UTF-8");
}

}  // namespace
}  // namespace kiln::models
