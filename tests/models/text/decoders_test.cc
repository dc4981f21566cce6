#include "models/text/decoders.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/models/text/hf_test_util.h"

namespace kiln::models {
namespace {

using ::kiln::models::testing::Build;
using ::kiln::models::testing::DecodeBytes;
using ::kiln::models::testing::TinyJson;

// The decode of `tokens` (all in the vocabulary, ids in order) by `decoder`.
std::string Decoded(const nlohmann::json& decoder, const std::vector<std::string>& tokens) {
  std::vector<std::string> vocab;
  std::vector<int32_t> ids;
  for (const std::string& token : tokens) {
    const auto it = std::find(vocab.begin(), vocab.end(), token);
    ids.push_back(static_cast<int32_t>(it - vocab.begin()));
    if (it == vocab.end()) vocab.push_back(token);
  }
  nlohmann::json root = TinyJson(vocab);
  root["decoder"] = decoder;
  const auto t = Build(root);
  return t ? DecodeBytes(*t, ids) : "<build failed>";
}

const nlohmann::json kLlama2Decoder = {
    {"type", "Sequence"},
    {"decoders",
     {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
      {{"type", "ByteFallback"}},
      {{"type", "Fuse"}},
      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};

TEST(Decoders, ByteLevelMapsCharactersBackToBytes) {
  const nlohmann::json byte_level = {{"type", "ByteLevel"}};
  EXPECT_EQ(Decoded(byte_level, {"\u0120Hello", "\u0120w\u00c3\u00a9"}), " Hello w\u00e9");
  // A token with a character outside the table is taken as it is.
  EXPECT_EQ(Decoded(byte_level, {"\u4e2d", "\u0120x"}), "\u4e2d x");
  // A token that stops inside a character leaves its bytes.
  EXPECT_EQ(Decoded(byte_level, {"\u00e4\u00b8"}), "\xE4\xB8");
}

TEST(Decoders, MetaspaceDropsTheFirstTokensMarks) {
  nlohmann::json metaspace = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}};
  EXPECT_EQ(Decoded(metaspace, {"\u2581Hello", "\u2581world"}), "Hello world");
  EXPECT_EQ(Decoded(metaspace, {"\u2581\u2581x", "\u2581y"}), "x y");  // every mark of the first token
  metaspace["prepend_scheme"] = "never";
  EXPECT_EQ(Decoded(metaspace, {"\u2581Hello", "\u2581world"}), " Hello world");
}

TEST(Decoders, Llama2Chain) {
  EXPECT_EQ(Decoded(kLlama2Decoder, {"\u2581H", "<0xC3>", "<0xA9>", "\u2581x"}), "H\u00e9 x");
  EXPECT_EQ(Decoded(kLlama2Decoder, {"<0x0A>", "\u2581a"}), "\n a");
}

TEST(Decoders, ByteFallbackRunsThatAreNotUtf8) {
  const nlohmann::json fallback = {{"type", "ByteFallback"}};
  EXPECT_EQ(Decoded(fallback, {"<0xFF>", "a"}), "\uFFFDa");
  // The whole run is replaced, byte for byte, valid bytes included.
  EXPECT_EQ(Decoded(fallback, {"<0x41>", "<0xFF>", "b"}), "\uFFFD\uFFFDb");
  EXPECT_EQ(Decoded(fallback, {"<0xe4>", "<0xb8>", "<0xad>"}), "\u4e2d");  // lowercase hex too
  // At the end, a run that stops inside a character keeps its bytes.
  EXPECT_EQ(Decoded(fallback, {"a", "<0xE4>", "<0xB8>"}), "a\xE4\xB8");
  EXPECT_EQ(Decoded(fallback, {"<0xE4>", "<0xB8>", "a"}), "\uFFFD\uFFFDa");
  EXPECT_EQ(Decoded(fallback, {"<0xZZ>", "<0x4>"}), "<0xZZ><0x4>");
}

TEST(Decoders, StripCountsFromEachEnd) {
  const nlohmann::json strip = {{"type", "Strip"}, {"content", "x"}, {"start", 2}, {"stop", 1}};
  EXPECT_EQ(Decoded(strip, {"xxxaxx"}), "xax");
  EXPECT_EQ(Decoded(strip, {"x"}), "");
  EXPECT_EQ(Decoded(strip, {"ab", "xb"}), "abb");  // per token
}

TEST(Decoders, ReplaceWithARegex) {
  const nlohmann::json replace = {{"type", "Replace"}, {"pattern", {{"Regex", "_+"}}}, {"content", " "}};
  EXPECT_EQ(Decoded(replace, {"a__b", "_c"}), "a b c");
}

TEST(Decoders, NoDecoderJoinsWithSpaces) { EXPECT_EQ(Decoded(nullptr, {"a", "b"}), "a b"); }

}  // namespace
}  // namespace kiln::models
