#include "models/text/added_vocabulary.h"

#include <algorithm>
#include <climits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "models/text/unicode_chars.h"
#include "models/text/utf8.h"

namespace kiln::models {
namespace {

bool SameToken(const AddedToken& a, const AddedToken& b) {
  return a.content == b.content && a.single_word == b.single_word && a.lstrip == b.lstrip &&
         a.rstrip == b.rstrip && a.normalized == b.normalized && a.special == b.special;
}

absl::StatusOr<AddedToken> ParseToken(const JsonNode& entry) {
  if (absl::Status s = entry.ExpectObject(); !s.ok()) return s;
  AddedToken token;
  absl::StatusOr<std::string> content = entry.String("content");
  if (!content.ok()) return content.status();
  token.content = *std::move(content);
  // The id is read only to check its type: tokenizers assigns its own.
  if (entry.Has("id")) {
    if (absl::StatusOr<uint64_t> id = entry.Field("id").AsUint(UINT32_MAX); !id.ok()) return id.status();
  }
  absl::StatusOr<bool> special = entry.Bool("special", false);
  if (!special.ok()) return special.status();
  token.special = *special;
  for (const auto& [key, flag, fallback] :
       {std::tuple{"single_word", &token.single_word, false}, std::tuple{"lstrip", &token.lstrip, false},
        std::tuple{"rstrip", &token.rstrip, false},
        std::tuple{"normalized", &token.normalized, !token.special}}) {
    absl::StatusOr<bool> value = entry.Bool(key, fallback);
    if (!value.ok()) return value.status();
    *flag = *value;
  }
  return token;
}

// Byte offset where the run of whitespace ending `text` starts.
size_t TrailingSpaceStart(absl::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
    size_t length = 1;
    if (!IsWhitespace(DecodeUtf8At(text, start, &length))) break;
    end = start;
  }
  return end;
}

// Length of the run of whitespace starting `text`.
size_t LeadingSpaceLength(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    size_t length = 1;
    if (!IsWhitespace(DecodeUtf8At(text, i, &length))) break;
    i += length;
  }
  return i;
}

}  // namespace

void AddedVocabulary::Matcher::Add(absl::string_view pattern, int32_t id) {
  if (terminal.empty()) terminal.push_back(-1);
  if (pattern.empty()) return;
  first_byte[static_cast<uint8_t>(pattern[0])] = true;
  int32_t node = 0;
  for (const char c : pattern) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(c);
    const auto it = children.find(key);
    if (it != children.end()) {
      node = it->second;
    } else {
      const int32_t child = static_cast<int32_t>(terminal.size());
      terminal.push_back(-1);
      children.emplace(key, child);
      node = child;
    }
  }
  // The same pattern twice: the first added wins, as in aho-corasick.
  if (terminal[node] < 0) terminal[node] = id;
}

std::pair<int32_t, size_t> AddedVocabulary::Matcher::LongestAt(absl::string_view text, size_t at) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = at; i < text.size(); ++i) {
    const auto it = children.find((static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[i]));
    if (it == children.end()) break;
    node = it->second;
    if (terminal[node] >= 0) best = {terminal[node], i + 1 - at};
  }
  return best;
}

absl::StatusOr<std::unique_ptr<AddedVocabulary>> AddedVocabulary::Parse(const JsonNode& list,
                                                                        const BpeModel& model,
                                                                        const Normalizer* normalizer) {
  auto vocabulary = std::make_unique<AddedVocabulary>();
  AddedVocabulary& v = *vocabulary;
  absl::StatusOr<std::unique_ptr<UnicodeRegex>> word_char =
      UnicodeRegex::FromOniguruma("[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]");
  if (!word_char.ok()) return absl::InternalError(word_char.status().message());
  v.word_char_ = *std::move(word_char);
  v.raw_.terminal.push_back(-1);
  v.normalized_.terminal.push_back(-1);
  v.id_limit_ = model.id_limit();
  if (list.value().is_null()) return vocabulary;
  if (absl::Status s = list.ExpectArray(); !s.ok()) return s;

  std::vector<AddedToken> given;
  given.reserve(list.value().size());
  for (size_t i = 0; i < list.value().size(); ++i) {
    absl::StatusOr<AddedToken> token = ParseToken(list.Element(i));
    if (!token.ok()) return token.status();
    given.push_back(*std::move(token));
  }
  // tokenizers' AddedVocabulary::add_tokens, the whole list at once.
  std::vector<const AddedToken*> specials, others;  // the order matching tries them in
  for (const AddedToken& t : given) {
    if (t.special && !t.content.empty() && v.special_contents_.insert(t.content).second) {
      specials.push_back(&t);
    }
  }
  const auto id_of = [&](const std::string& content) {
    const auto it = v.id_of_content_.find(content);
    return it != v.id_of_content_.end() ? it->second : model.TokenToId(content);
  };
  // New ids count up from the model's number of tokens (not its largest id:
  // tokenizers 0.23 does so even where the model's ids leave holes).
  int64_t next_id = static_cast<int64_t>(model.size());
  for (const AddedToken& t : given) {
    if (t.content.empty()) continue;
    if (const auto it = v.id_of_content_.find(t.content);
        it != v.id_of_content_.end() && SameToken(v.tokens_[it->second], t)) {
      continue;
    }
    int64_t id = id_of(t.content);
    if (id < 0) id = next_id++;
    if (id >= INT32_MAX) return list.Invalid("assigns ids beyond the int32 range");
    v.id_of_content_[t.content] = static_cast<int32_t>(id);
    AddedToken& stored = v.tokens_[static_cast<int32_t>(id)];
    stored = t;
    stored.decoded = t.content;
    if (t.normalized && normalizer != nullptr) {
      if (absl::Status s = normalizer->Normalize(&stored.decoded); !s.ok()) {
        return list.Invalid(absl::StrCat("has a token the normalizer rejects: ", s.message()));
      }
    }
    v.id_limit_ = std::max(v.id_limit_, static_cast<int32_t>(id + 1));
    if (!v.special_contents_.contains(t.content)) others.push_back(&t);
  }
  std::vector<const AddedToken*> ordered = specials;
  ordered.insert(ordered.end(), others.begin(), others.end());
  for (const AddedToken* t : ordered) {
    const int32_t id = id_of(t->content);
    if (!t->normalized) {
      v.raw_.Add(t->content, id);
      continue;
    }
    std::string pattern = t->content;
    if (normalizer != nullptr) {
      if (absl::Status s = normalizer->Normalize(&pattern); !s.ok()) {
        return list.Invalid(absl::StrCat("has a token the normalizer rejects: ", s.message()));
      }
    }
    v.normalized_.Add(pattern, id);
  }
  return vocabulary;
}

int32_t AddedVocabulary::TokenToId(absl::string_view content) const {
  const auto it = id_of_content_.find(content);
  return it == id_of_content_.end() ? -1 : it->second;
}

const AddedToken* AddedVocabulary::Token(int32_t id) const {
  const auto it = tokens_.find(id);
  return it == tokens_.end() ? nullptr : &it->second;
}

bool AddedVocabulary::IsWordChar(int32_t cp) const {
  if (cp < 0) return false;
  std::string text;
  AppendUtf8(static_cast<uint32_t>(cp), &text);
  std::vector<std::pair<size_t, size_t>> matches;
  return word_char_->FindAll(text, &matches).ok() && !matches.empty();
}

absl::Status AddedVocabulary::Split(std::vector<TextPiece>* pieces, bool normalized,
                                    bool parse_special) const {
  const Matcher& matcher = normalized ? normalized_ : raw_;
  if (matcher.empty()) return absl::OkStatus();
  std::vector<TextPiece> out;
  out.reserve(pieces->size());
  for (TextPiece& piece : *pieces) {
    if (piece.token_id >= 0) {
      out.push_back(std::move(piece));
      continue;
    }
    if (absl::Status s = SplitPiece(piece, matcher, parse_special, &out); !s.ok()) return s;
  }
  *pieces = std::move(out);
  return absl::OkStatus();
}

absl::Status AddedVocabulary::SplitPiece(const TextPiece& piece, const Matcher& matcher, bool parse_special,
                                         std::vector<TextPiece>* out) const {
  const absl::string_view text = piece.text;
  const auto emit = [&](size_t begin, size_t end, int32_t id) {
    if (begin >= end) return;  // tokenizers drops empty splits
    TextPiece sub;
    sub.text = std::string(text.substr(begin, end - begin));
    sub.token_id = id;
    sub.at_input_start = piece.at_input_start && begin == 0;
    out->push_back(std::move(sub));
  };
  size_t start_offset = 0;  // end of the last token taken
  size_t search = 0;        // where the next match may start
  while (search < text.size()) {
    if (!matcher.first_byte[static_cast<uint8_t>(text[search])]) {
      ++search;
      continue;
    }
    const auto [id, length] = matcher.LongestAt(text, search);
    if (id < 0) {
      ++search;
      continue;
    }
    size_t start = search, stop = search + length;
    search = stop;
    const AddedToken* token = Token(id);
    if (token == nullptr) continue;
    if (!parse_special && special_contents_.contains(token->content)) continue;
    if (token->single_word) {
      size_t unused = 0;
      size_t last = start > 0 ? start - 1 : 0;  // the first byte of the character before
      while (last > 0 && (static_cast<uint8_t>(text[last]) & 0xC0) == 0x80) --last;
      const bool word_before = start > 0 && IsWordChar(DecodeUtf8At(text, last, &unused));
      const bool word_after = stop < text.size() && IsWordChar(DecodeUtf8At(text, stop, &unused));
      if (word_before || word_after) continue;
    }
    if (token->lstrip) start = std::max(TrailingSpaceStart(text.substr(0, start)), start_offset);
    if (token->rstrip) stop += LeadingSpaceLength(text.substr(stop));
    if (start_offset < start) emit(start_offset, start, -1);
    emit(start, stop, id);
    start_offset = stop;
  }
  if (start_offset != text.size()) emit(start_offset, text.size(), -1);
  return absl::OkStatus();
}

}  // namespace kiln::models
