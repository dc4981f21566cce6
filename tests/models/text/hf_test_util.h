// Small tokenizer.json objects for the HfTokenizer tests: a BPE model over a
// given token list, with ignore_merges so that a word in the list comes out
// as one token and the tests can read the pre-tokenizer's cuts from the ids.
#ifndef KILN_TESTS_MODELS_TEXT_HF_TEST_UTIL_H_
#define KILN_TESTS_MODELS_TEXT_HF_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "models/text/hf_tokenizer.h"
#include "nlohmann/json.hpp"

namespace kiln::models::testing {

// {"model": {"type": "BPE", "vocab": tokens in id order, "merges": merges,
// "ignore_merges": true}} and null everything else.
inline nlohmann::json TinyJson(const std::vector<std::string>& tokens,
                               nlohmann::json merges = nlohmann::json::array()) {
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  return {{"version", "1.0"},
          {"added_tokens", nlohmann::json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", true}}}};
}

inline std::unique_ptr<HfTokenizer> Build(const nlohmann::json& root) {
  absl::StatusOr<std::unique_ptr<HfTokenizer>> tokenizer = HfTokenizer::FromJson(root, "test.json");
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

inline std::vector<int32_t> Ids(const HfTokenizer& tokenizer, const std::string& text,
                                bool add_special = true, bool parse_special = true) {
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(text, {add_special, parse_special});
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

// The tokens `text` encodes to, as their stored strings.
inline std::vector<std::string> Tokens(const HfTokenizer& tokenizer, const std::string& text,
                                       bool add_special = true, bool parse_special = true) {
  std::vector<std::string> out;
  for (const int32_t id : Ids(tokenizer, text, add_special, parse_special)) {
    out.push_back(tokenizer.TokenText(id));
  }
  return out;
}

inline std::string DecodeBytes(const HfTokenizer& tokenizer, const std::vector<int32_t>& ids,
                               bool skip = false) {
  absl::StatusOr<std::string> text = tokenizer.DecodeBytes(ids, skip);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : std::string();
}

}  // namespace kiln::models::testing

#endif  // KILN_TESTS_MODELS_TEXT_HF_TEST_UTIL_H_
