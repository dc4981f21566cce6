#include "models/text/sentencepiece_tokenizer.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/text/stream_decoder.h"
#include "nlohmann/json.hpp"

namespace kiln::models {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::string kReferences = std::string(KILN_SOURCE_DIR) + "/tests/models/references";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// tokenizers.json: made by make_references.py with sentencepiece 0.2.2.
const json& References() {
  static const json* refs = [] {
    json* j = new json(json::parse(ReadFile(kReferences + "/tokenizers.json"), nullptr, false));
    EXPECT_FALSE(j->is_discarded());
    return j;
  }();
  return *refs;
}

std::string PathOf(const std::string& relative) {
  return relative.rfind("fixtures/", 0) == 0 ? std::string(KILN_SHARED_DIR) + "/" + relative
                                             : kReferences + "/" + relative;
}

std::unique_ptr<SentencePieceTokenizer> LoadOrDie(const std::string& path) {
  absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> t = SentencePieceTokenizer::Load(path);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

// Checks every text of the reference file against one sentencepiece model.
void ExpectMatchesReferences(const std::string& name) {
  const json& entry = References()["tokenizers"][name];
  ASSERT_TRUE(entry.is_object()) << name;
  std::unique_ptr<SentencePieceTokenizer> t = LoadOrDie(PathOf(entry["path"]));
  ASSERT_NE(t, nullptr);
  const json& texts = References()["texts"];
  ASSERT_EQ(texts.size(), entry["encode"].size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i];
    SCOPED_TRACE(name + ": text " + std::to_string(i) + " \"" + text.substr(0, 40) + "\"");
    // sp.encode() takes the text whole: "<s>" in the text is not a control piece.
    absl::StatusOr<std::vector<int32_t>> with =
        t->Encode(text, {.add_special_tokens = true, .parse_special = false});
    absl::StatusOr<std::vector<int32_t>> without =
        t->Encode(text, {.add_special_tokens = false, .parse_special = false});
    ASSERT_TRUE(with.ok() && without.ok());
    EXPECT_EQ(*with, entry["encode"][i]["with_special"].get<std::vector<int32_t>>());
    EXPECT_EQ(*without, entry["encode"][i]["without_special"].get<std::vector<int32_t>>());
    absl::StatusOr<std::string> decoded = t->Decode(*with);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, entry["decode"][i]["text"].get<std::string>());
    // Streaming gives the same text, one whole character at a time.
    StreamDecoder stream(*t, /*skip_special_tokens=*/false);
    std::string streamed;
    for (int32_t id : *with) {
      absl::StatusOr<std::string> piece = stream.Push(id);
      ASSERT_TRUE(piece.ok());
      streamed += *piece;
    }
    streamed += stream.Finish();
    EXPECT_EQ(streamed, *decoded);
  }
}

TEST(SentencePieceTokenizer, MatchesSentencepieceOnLlama2) { ExpectMatchesReferences("llama2"); }

TEST(SentencePieceTokenizer, MatchesSentencepieceOnATrainedBpeModel) {
  ExpectMatchesReferences("tiny-mistral");
}

TEST(SentencePieceTokenizer, ReadsTheModelsFields) {
  std::unique_ptr<SentencePieceTokenizer> t =
      LoadOrDie(std::string(KILN_SHARED_DIR) + "/fixtures/tokenizers/llama2/tokenizer.model");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->vocab_size(), 32000);
  EXPECT_EQ(t->model().bos_id, 1);
  EXPECT_EQ(t->model().eos_id, 2);
  EXPECT_EQ(t->model().unk_id, 0);
  EXPECT_TRUE(t->model().byte_fallback);
  EXPECT_EQ(t->model().model_type, SpmModel::ModelType::kBpe);
  EXPECT_EQ(t->TokenId("<s>"), 1);
  EXPECT_TRUE(t->IsSpecial(1));
  EXPECT_FALSE(t->IsSpecial(100));
  EXPECT_THAT(t->Describe(), HasSubstr("32000 pieces"));
}

TEST(SentencePieceTokenizer, ParsesControlPiecesInTextWhenAsked) {
  std::unique_ptr<SentencePieceTokenizer> t =
      LoadOrDie(std::string(KILN_SHARED_DIR) + "/fixtures/tokenizers/llama2/tokenizer.model");
  ASSERT_NE(t, nullptr);
  absl::StatusOr<std::vector<int32_t>> ids =
      t->Encode("<s>[INST] Hi [/INST]</s>", {.add_special_tokens = false, .parse_special = true});
  ASSERT_TRUE(ids.ok());
  ASSERT_GE(ids->size(), 3u);
  EXPECT_EQ(ids->front(), 1);
  EXPECT_EQ(ids->back(), 2);
  absl::StatusOr<std::vector<int32_t>> middle =
      t->Encode("[INST] Hi [/INST]", {.add_special_tokens = false, .parse_special = false});
  ASSERT_TRUE(middle.ok());
  EXPECT_EQ(std::vector<int32_t>(ids->begin() + 1, ids->end() - 1), *middle);
}

TEST(SentencePieceTokenizer, RebuiltModelEncodesAlike) {
  std::unique_ptr<SentencePieceTokenizer> t =
      LoadOrDie(kReferences + "/models/tiny-mistral/tokenizer.model");
  ASSERT_NE(t, nullptr);
  SpmModel copy = t->model();
  copy.normalizer_name = "";  // identity, as a GGUF vocabulary is rebuilt
  absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> rebuilt =
      SentencePieceTokenizer::FromModel(copy, "rebuilt");
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  for (const json& text : References()["texts"]) {
    EXPECT_EQ(*t->Encode(text.get<std::string>(), {}), *(*rebuilt)->Encode(text.get<std::string>(), {}))
        << text;
  }
}

TEST(SentencePieceTokenizer, StreamsByteFallbackCharactersWhole) {
  std::unique_ptr<SentencePieceTokenizer> t =
      LoadOrDie(std::string(KILN_SHARED_DIR) + "/fixtures/tokenizers/llama2/tokenizer.model");
  ASSERT_NE(t, nullptr);
  // U+1F916 is four byte pieces in Llama 2's vocabulary.
  const int32_t b0 = t->TokenId("<0xF0>"), b1 = t->TokenId("<0x9F>"), b2 = t->TokenId("<0xA4>"),
                b3 = t->TokenId("<0x96>");
  StreamDecoder stream(*t, false);
  EXPECT_EQ(*stream.Push(b0), "");
  EXPECT_EQ(*stream.Push(b1), "");
  EXPECT_EQ(*stream.Push(b2), "");
  EXPECT_EQ(*stream.Push(b3), "\xF0\x9F\xA4\x96");
  EXPECT_EQ(*stream.Push(b0), "");
  EXPECT_EQ(stream.Finish(), "\xEF\xBF\xBD");  // a character never finished
}

TEST(SentencePieceTokenizer, BadFilesGiveClearErrors) {
  EXPECT_EQ(SentencePieceTokenizer::Load("/nonexistent/tokenizer.model").status().code(),
            absl::StatusCode::kNotFound);
  for (const std::string& bytes : {std::string(), std::string("\x0a\xff\xff", 3),
                                   std::string("not a protobuf at all"), std::string("\x0a\x02\x0a", 3)}) {
    absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> t =
        SentencePieceTokenizer::FromBytes(bytes, "bad.model");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
    EXPECT_THAT(t.status().message(), HasSubstr("bad.model"));
  }
  // Every truncation of a real model fails cleanly or loads a smaller one.
  const std::string real = ReadFile(kReferences + "/models/tiny-mistral/tokenizer.model");
  for (size_t n = 0; n < real.size(); n += 97) {
    (void)SentencePieceTokenizer::FromBytes(real.substr(0, n), "truncated.model");
  }
  EXPECT_FALSE(
      (*LoadOrDie(kReferences + "/models/tiny-mistral/tokenizer.model")).Decode({999999}).ok());
}

}  // namespace
}  // namespace kiln::models
