#include "models/text/llama2c_tokenizer.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::models {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string& Tok512Path() {
  static const std::string* path =
      new std::string(absl::StrCat(KILN_SHARED_DIR, "/models/tok512.bin"));
  return *path;
}

const Llama2cTokenizer& Tok512() {
  static const Llama2cTokenizer* tokenizer = [] {
    absl::StatusOr<Llama2cTokenizer> t = Llama2cTokenizer::Load(Tok512Path(), 512);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? new Llama2cTokenizer(*std::move(t)) : nullptr;
  }();
  if (tokenizer == nullptr) ADD_FAILURE() << "tok512.bin did not load";
  return *tokenizer;
}

std::vector<int32_t> EncodeOrDie(const Llama2cTokenizer& t, absl::string_view text, bool bos, bool eos) {
  absl::StatusOr<std::vector<int32_t>> tokens = t.Encode(text, bos, eos);
  EXPECT_TRUE(tokens.ok()) << tokens.status();
  return tokens.ok() ? *tokens : std::vector<int32_t>{};
}

// What a generator prints: each token decoded after its predecessor.
std::string DecodeAll(const Llama2cTokenizer& t, const std::vector<int32_t>& tokens) {
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) {
    absl::StatusOr<std::string> piece = t.Decode(i == 0 ? -1 : tokens[i - 1], tokens[i]);
    EXPECT_TRUE(piece.ok()) << piece.status();
    if (piece.ok()) text += *piece;
  }
  return text;
}

// llama2.c's merge loop, verbatim in behaviour: rescan every pair, take the
// first best. The reference for the priority-queue implementation.
std::vector<int32_t> ReferenceMerge(const Llama2cTokenizer& t, std::vector<int32_t> tokens) {
  while (true) {
    float best_score = -1e10f;
    int best_index = -1;
    int32_t best_id = -1;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const int32_t id = t.Lookup(t.piece(tokens[i]) + t.piece(tokens[i + 1]));
      if (id >= 0 && t.score(id) > best_score) {
        best_score = t.score(id);
        best_index = static_cast<int>(i);
        best_id = id;
      }
    }
    if (best_index < 0) return tokens;
    tokens[best_index] = best_id;
    tokens.erase(tokens.begin() + best_index + 1);
  }
}

std::vector<int32_t> ReferenceEncode(const Llama2cTokenizer& t, const std::string& text) {
  std::vector<int32_t> tokens;
  if (!text.empty()) tokens.push_back(t.Lookup(" "));
  for (size_t i = 0; i < text.size();) {
    size_t end = i + 1;
    while (end < text.size() && end - i < 4 && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80) {
      ++end;
    }
    const int32_t id = t.Lookup(text.substr(i, end - i));
    if (id >= 0) {
      tokens.push_back(id);
    } else {
      for (size_t k = i; k < end; ++k) tokens.push_back(static_cast<uint8_t>(text[k]) + 3);
    }
    i = end;
  }
  return ReferenceMerge(t, tokens);
}

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/kiln_tokenizer_test_", name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::string I32Bytes(int32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

std::string TokenRecord(float score, int32_t length, const std::string& bytes) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &score, 4);
  return s + I32Bytes(length) + bytes;
}

// A well-formed three-token file: <unk>, BOS, EOS.
std::string ThreeTokenFile() {
  return I32Bytes(5) + TokenRecord(0, 5, "<unk>") + TokenRecord(0, 3, "<s>") +
         TokenRecord(0, 4, "</s>");
}

void ExpectLoadError(const std::string& name, const std::string& bytes, int vocab_size,
                     absl::StatusCode code, const std::string& problem) {
  const std::string path = WriteTemp(name, bytes);
  absl::StatusOr<Llama2cTokenizer> t = Llama2cTokenizer::Load(path, vocab_size);
  ASSERT_FALSE(t.ok()) << name;
  EXPECT_EQ(t.status().code(), code) << t.status();
  EXPECT_THAT(t.status().message(), HasSubstr(path));
  EXPECT_THAT(t.status().message(), HasSubstr(problem));
}

TEST(Llama2cTokenizer, LoadsTok512) {
  const Llama2cTokenizer& t = Tok512();
  EXPECT_EQ(t.vocab_size(), 512);
  EXPECT_EQ(t.piece(403), " Once");
  EXPECT_EQ(t.Lookup(" upon"), 407);
  EXPECT_EQ(t.Lookup("<0x0A>"), 13);
  EXPECT_EQ(t.Lookup("not a piece"), -1);
}

TEST(Llama2cTokenizer, EncodesOnceUponATimeAsLlama2cDoes) {
  EXPECT_THAT(EncodeOrDie(Tok512(), "Once upon a time", true, false),
              ElementsAre(1, 403, 407, 261, 378));
}

TEST(Llama2cTokenizer, DecodesOnceUponATimeWithoutTheDummySpace) {
  const std::vector<int32_t> tokens = EncodeOrDie(Tok512(), "Once upon a time", true, false);
  ASSERT_FALSE(tokens.empty());
  EXPECT_EQ(tokens[0], Llama2cTokenizer::kBos);
  // BOS itself decodes to its piece; generators print what follows it.
  const std::vector<int32_t> after_bos(tokens.begin() + 1, tokens.end());
  std::string text;
  int32_t prev = Llama2cTokenizer::kBos;
  for (int32_t token : after_bos) {
    absl::StatusOr<std::string> piece = Tok512().Decode(prev, token);
    ASSERT_TRUE(piece.ok()) << piece.status();
    text += *piece;
    prev = token;
  }
  EXPECT_EQ(text, "Once upon a time");
}

TEST(Llama2cTokenizer, FallsBackToBytesForUnknownCodePoints) {
  // "é" is a piece of tok512; "日" (E6 97 A5) and "本" (E6 9C AC) are not.
  EXPECT_THAT(EncodeOrDie(Tok512(), "h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac", true, false),
              ElementsAre(1, 270, 485, 306, 414, 410, 0xE6 + 3, 0x97 + 3, 0xA5 + 3, 0xE6 + 3,
                          0x9C + 3, 0xAC + 3));
  EXPECT_THAT(EncodeOrDie(Tok512(), "Hi!\nThe end.", true, false),
              ElementsAre(1, 320, 417, 443, 13, 434, 260, 344, 264, 426));
}

TEST(Llama2cTokenizer, RoundTripsText) {
  const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily.",
      "Lily said: \"Let's play!\"\n\nThe end.",
      "h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac",
      "tabs\tand  double  spaces ",
      " leading space",
      "\xe2\x82\xac"
      "100 \xe2\x80\x93 50% (maybe) [x] {y} ~z~ \xf0\x9f\x98\x80",
      "a",
      "\n",
      std::string("nul\0byte", 8),
      "\x80\x80 lone continuation bytes and \xc3 a cut lead byte",
      "\xf0\x9f\x98\x80\x80\x80 more continuations than UTF-8 allows",
  };
  for (const std::string& text : texts) {
    const std::vector<int32_t> with_bos = EncodeOrDie(Tok512(), text, true, false);
    ASSERT_FALSE(with_bos.empty());
    const std::vector<int32_t> body(with_bos.begin() + 1, with_bos.end());
    std::string decoded;
    int32_t prev = Llama2cTokenizer::kBos;
    for (int32_t token : body) {
      decoded += *Tok512().Decode(prev, token);
      prev = token;
    }
    EXPECT_EQ(decoded, text);
    // Without BOS the dummy-prefix space stays.
    EXPECT_EQ(DecodeAll(Tok512(), EncodeOrDie(Tok512(), text, false, false)), " " + text);
  }
}

TEST(Llama2cTokenizer, MatchesLlama2cMergeLoopOnRandomText) {
  const std::vector<std::string> alphabet = {
      "a", "e", "t",  "h",    " ",   "  ",       "the",          " was",         "ing",
      ".", ",", "\n", "Lily", "Tim", "\xc3\xa9", "\xe6\x97\xa5", "\xe2\x80\x9c", "\xe2\x80\x9d",
      "!", "'", "0",  "Z",    "\x80"};
  std::mt19937 rng(7);  // only picks test inputs; the expectations do not depend on it
  for (int round = 0; round < 200; ++round) {
    std::string text;
    const int parts = static_cast<int>(rng() % 40);
    for (int k = 0; k < parts; ++k) text += alphabet[rng() % alphabet.size()];
    EXPECT_EQ(EncodeOrDie(Tok512(), text, false, false), ReferenceEncode(Tok512(), text))
        << "text: " << text;
  }
}

TEST(Llama2cTokenizer, EncodesLongTextQuickly) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "Once upon a time, Lily saw a big red ball. ";
  const std::vector<int32_t> tokens = EncodeOrDie(Tok512(), text, false, false);
  EXPECT_LT(tokens.size(), text.size() / 2);
  EXPECT_EQ(DecodeAll(Tok512(), tokens), " " + text);
}

TEST(Llama2cTokenizer, AddsSpecialTokensOnRequest) {
  const std::vector<int32_t> plain = EncodeOrDie(Tok512(), "Hi", false, false);
  ASSERT_FALSE(plain.empty());
  EXPECT_NE(plain.front(), Llama2cTokenizer::kBos);
  EXPECT_NE(plain.back(), Llama2cTokenizer::kEos);
  std::vector<int32_t> both = plain;
  both.insert(both.begin(), Llama2cTokenizer::kBos);
  both.push_back(Llama2cTokenizer::kEos);
  EXPECT_EQ(EncodeOrDie(Tok512(), "Hi", true, true), both);
  std::vector<int32_t> eos_only = plain;
  eos_only.push_back(Llama2cTokenizer::kEos);
  EXPECT_EQ(EncodeOrDie(Tok512(), "Hi", false, true), eos_only);
}

TEST(Llama2cTokenizer, EncodesEmptyTextWithoutDummyPrefix) {
  EXPECT_TRUE(EncodeOrDie(Tok512(), "", false, false).empty());
  EXPECT_THAT(EncodeOrDie(Tok512(), "", true, false), ElementsAre(1));
  EXPECT_THAT(EncodeOrDie(Tok512(), "", true, true), ElementsAre(1, 2));
}

TEST(Llama2cTokenizer, DecodesBytePiecesAndStripsSpaceOnlyAfterBos) {
  const Llama2cTokenizer& t = Tok512();
  EXPECT_EQ(*t.Decode(0, 13), "\n");  // <0x0A>
  EXPECT_EQ(*t.Decode(Llama2cTokenizer::kBos, 13), "\n");
  EXPECT_EQ(*t.Decode(0, 0xE6 + 3), "\xe6");
  EXPECT_EQ(*t.Decode(0, 403), " Once");
  EXPECT_EQ(*t.Decode(Llama2cTokenizer::kBos, 403), "Once");
  EXPECT_EQ(*t.Decode(Llama2cTokenizer::kBos, 410), "");  // " "
  // The rule looks at the stored piece: <0x20> after BOS keeps its space.
  EXPECT_EQ(*t.Decode(Llama2cTokenizer::kBos, 0x20 + 3), " ");
}

TEST(Llama2cTokenizer, RejectsOutOfRangeIds) {
  for (int32_t id : {-1, 512, 1 << 30}) {
    absl::StatusOr<std::string> piece = Tok512().Decode(0, id);
    ASSERT_FALSE(piece.ok()) << id;
    EXPECT_EQ(piece.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(piece.status().message(), HasSubstr(absl::StrCat(id)));
  }
  // prev_token is only compared with BOS, so any value is harmless.
  EXPECT_EQ(*Tok512().Decode(-7, 403), " Once");
}

TEST(Llama2cTokenizer, MergesHighestScoreFirstAndLeftmostOnTies) {
  const std::vector<std::string> pieces = {"<unk>", "<s>", "</s>", " ", "a", "b", "ab", "ba", " a"};
  // "ab" and "ba" tie: the leftmost pair ("ab" in " a b a") merges first.
  absl::StatusOr<Llama2cTokenizer> tie = Llama2cTokenizer::FromPieces(pieces, {0, 0, 0, 0, 0, 0, -1, -1, -5});
  ASSERT_TRUE(tie.ok()) << tie.status();
  EXPECT_THAT(EncodeOrDie(*tie, "aba", false, false), ElementsAre(3, 6, 4));
  // With "ba" scoring higher it goes first, and " a" can then merge.
  absl::StatusOr<Llama2cTokenizer> ranked = Llama2cTokenizer::FromPieces(pieces, {0, 0, 0, 0, 0, 0, -3, -1, -5});
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  EXPECT_THAT(EncodeOrDie(*ranked, "aba", false, false), ElementsAre(8, 7));
}

TEST(Llama2cTokenizer, NeverMergesPairsScoringAtOrBelowLlama2cFloor) {
  absl::StatusOr<Llama2cTokenizer> t =
      Llama2cTokenizer::FromPieces({"<unk>", "<s>", "</s>", " ", "a", " a"}, {0, 0, 0, 0, 0, -1e10f});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(EncodeOrDie(*t, "a", false, false), ElementsAre(3, 4));
}

TEST(Llama2cTokenizer, RejectsTokensOutsideASmallVocabulary) {
  // No byte tokens: an unknown character cannot be encoded.
  absl::StatusOr<Llama2cTokenizer> t =
      Llama2cTokenizer::FromPieces({"<unk>", "<s>", "</s>", " ", "a"}, {0, 0, 0, 0, 0});
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<std::vector<int32_t>> tokens = t->Encode("ab", false, false);
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tokens.status().message(), HasSubstr("byte-fallback"));
  // A one-token vocabulary has no BOS or EOS.
  absl::StatusOr<Llama2cTokenizer> tiny = Llama2cTokenizer::FromPieces({" "}, {0});
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  EXPECT_FALSE(tiny->Encode("", true, false).ok());
  EXPECT_FALSE(tiny->Encode("", false, true).ok());
  EXPECT_THAT(EncodeOrDie(*tiny, " ", false, false), ElementsAre(0, 0));
}

TEST(Llama2cTokenizer, FromPiecesRejectsMismatchedInput) {
  EXPECT_FALSE(Llama2cTokenizer::FromPieces({}, {}).ok());
  EXPECT_FALSE(Llama2cTokenizer::FromPieces({"a", "b"}, {0}).ok());
}

TEST(Llama2cTokenizer, LoadsAGeneratedFile) {
  const std::string path = WriteTemp("good", ThreeTokenFile());
  absl::StatusOr<Llama2cTokenizer> t = Llama2cTokenizer::Load(path, 3);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->vocab_size(), 3);
  EXPECT_EQ(t->piece(2), "</s>");
}

TEST(Llama2cTokenizer, RejectsMissingFile) {
  absl::StatusOr<Llama2cTokenizer> t = Llama2cTokenizer::Load(::testing::TempDir() + "/no_such_tok.bin", 3);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), HasSubstr("no_such_tok.bin"));
}

TEST(Llama2cTokenizer, RejectsNonPositiveVocabSize) {
  ExpectLoadError("vocab0", ThreeTokenFile(), 0, absl::StatusCode::kInvalidArgument,
                  "vocab_size must be positive");
  ExpectLoadError("vocab_neg", ThreeTokenFile(), -5, absl::StatusCode::kInvalidArgument,
                  "vocab_size must be positive");
}

TEST(Llama2cTokenizer, RejectsEmptyAndTruncatedFiles) {
  ExpectLoadError("empty", "", 3, absl::StatusCode::kInvalidArgument, "empty");
  ExpectLoadError("short_header", std::string("\x05\x00", 2), 3, absl::StatusCode::kInvalidArgument,
                  "truncated");
  const std::string good = ThreeTokenFile();
  // Cut inside the last record's score/length, then inside its bytes.
  ExpectLoadError("cut_record", good.substr(0, 4 + 13 + 11 + 5), 3,
                  absl::StatusCode::kInvalidArgument, "truncated");
  ExpectLoadError("cut_bytes", good.substr(0, good.size() - 2), 3,
                  absl::StatusCode::kInvalidArgument, "only 2 bytes remain");
  // A vocab_size larger than the file holds reads past the last token.
  ExpectLoadError("too_few_tokens", good, 4, absl::StatusCode::kInvalidArgument, "token 3 of 4");
  // A huge vocab_size must not allocate for it before finding the file short.
  ExpectLoadError("huge_vocab", good, 1 << 30, absl::StatusCode::kInvalidArgument, "truncated");
}

TEST(Llama2cTokenizer, RejectsTok512CutAnywhere) {
  std::ifstream in(Tok512Path(), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), 6227u);
  // Every cut in the first records (each field boundary), then a sample: file
  // writes dominate the run time.
  std::vector<size_t> cuts;
  for (size_t cut = 0; cut < 64; ++cut) cuts.push_back(cut);
  for (size_t cut = 64; cut < bytes.size(); cut += 101) cuts.push_back(cut);
  cuts.push_back(bytes.size() - 1);
  for (size_t cut : cuts) {
    const std::string path = WriteTemp("cut", bytes.substr(0, cut));
    absl::StatusOr<Llama2cTokenizer> t = Llama2cTokenizer::Load(path, 512);
    ASSERT_FALSE(t.ok()) << cut;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  }
}

TEST(Llama2cTokenizer, SurvivesRandomBytes) {
  std::mt19937 rng(11);
  for (int round = 0; round < 100; ++round) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 8 == 0 ? 0xff : rng() % 16);
    const std::string path = WriteTemp("random", bytes);
    absl::StatusOr<Llama2cTokenizer> t = Llama2cTokenizer::Load(path, 1 + static_cast<int>(rng() % 4));
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
      continue;
    }
    // Whatever loaded must encode and decode without reading out of bounds.
    absl::StatusOr<std::vector<int32_t>> tokens = t->Encode(bytes, true, true);
    if (tokens.ok()) {
      for (int32_t token : *tokens) EXPECT_TRUE(t->Decode(Llama2cTokenizer::kBos, token).ok());
    }
  }
}

TEST(Llama2cTokenizer, RejectsBadLengths) {
  ExpectLoadError("neg_len", I32Bytes(5) + TokenRecord(0, -3, "abc"), 1,
                  absl::StatusCode::kInvalidArgument, "negative length -3");
  ExpectLoadError("huge_len", I32Bytes(5) + TokenRecord(0, INT32_MAX, "abc"), 1,
                  absl::StatusCode::kInvalidArgument, "length 2147483647");
  ExpectLoadError("long_len", I32Bytes(5) + TokenRecord(0, 10, "abc"), 1,
                  absl::StatusCode::kInvalidArgument, "only 3 bytes remain");
  ExpectLoadError("neg_max", I32Bytes(-1) + TokenRecord(0, 1, "a"), 1,
                  absl::StatusCode::kInvalidArgument, "negative max_token_length");
}

TEST(Llama2cTokenizer, RejectsMoreTokensThanTheVocabulary) {
  ExpectLoadError("extra", ThreeTokenFile(), 2, absl::StatusCode::kInvalidArgument,
                  "more tokens than the model's vocabulary");
  absl::StatusOr<Llama2cTokenizer> t = Llama2cTokenizer::Load(Tok512Path(), 256);
  EXPECT_FALSE(t.ok());
}

}  // namespace
}  // namespace kiln::models
