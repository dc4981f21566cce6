#include "models/text/split_spans.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "models/text/unicode_chars.h"

namespace kiln::models {

absl::StatusOr<SplitBehavior> ParseSplitBehavior(absl::string_view name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return absl::InvalidArgumentError(absl::StrCat("\"", name,
                                                 "\" is not a split behavior (Removed, Isolated, ",
                                                 "MergedWithPrevious, MergedWithNext, Contiguous)"));
}

absl::StatusOr<std::vector<Span>> SpansOfRegex(const UnicodeRegex& regex, absl::string_view text) {
  std::vector<Span> spans;
  if (text.empty()) {
    spans.push_back({0, 0, false});
    return spans;
  }
  std::vector<std::pair<size_t, size_t>> matches;
  if (absl::Status s = regex.FindAll(text, &matches); !s.ok()) return s;
  size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (previous != begin) spans.push_back({previous, begin, false});
    spans.push_back({begin, end, true});
    previous = end;
  }
  if (previous != text.size()) spans.push_back({previous, text.size(), false});
  return spans;
}

std::vector<Span> SpansOfCharacters(absl::string_view text, const std::function<bool(int32_t)>& predicate) {
  std::vector<Span> spans;
  if (text.empty()) {
    spans.push_back({0, 0, false});
    return spans;
  }
  size_t last_end = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t length = 1;
    const int32_t cp = DecodeUtf8At(text, i, &length);
    if (cp >= 0 && predicate(cp)) {
      if (last_end < i) spans.push_back({last_end, i, false});
      spans.push_back({i, i + length, true});
      last_end = i + length;
    }
    i += length;
  }
  if (last_end < text.size()) spans.push_back({last_end, text.size(), false});
  return spans;
}

std::vector<std::pair<size_t, size_t>> ApplySplitBehavior(const std::vector<Span>& spans,
                                                          SplitBehavior behavior) {
  std::vector<std::pair<size_t, size_t>> kept;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Span& s : spans) kept.emplace_back(s.begin, s.end);
      break;
    case SplitBehavior::kRemoved:
      for (const Span& s : spans) {
        if (!s.is_match) kept.emplace_back(s.begin, s.end);
      }
      break;
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (s.is_match == previous_match && !kept.empty()) {
          kept.back().second = s.end;
        } else {
          kept.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !kept.empty()) {
          kept.back().second = s.end;
        } else {
          kept.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !kept.empty()) {
          kept.back().first = it->begin;
        } else {
          kept.emplace_back(it->begin, it->end);
        }
        previous_match = it->is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  return kept;
}

absl::StatusOr<std::unique_ptr<UnicodeRegex>> ParsePattern(const JsonNode& node) {
  if (absl::Status s = node.ExpectObject(); !s.ok()) return s;
  const bool literal = node.Has("String");
  if (literal == node.Has("Regex")) return node.Invalid("needs exactly one of \"String\" and \"Regex\"");
  const JsonNode field = node.Field(literal ? "String" : "Regex");
  absl::StatusOr<std::string> text = field.AsString();
  if (!text.ok()) return text.status();
  absl::StatusOr<std::unique_ptr<UnicodeRegex>> regex =
      literal ? UnicodeRegex::Literal(*text) : UnicodeRegex::FromOniguruma(*text);
  if (!regex.ok()) return field.Invalid(regex.status().message());
  return regex;
}

absl::StatusOr<std::string> ReplaceAll(const UnicodeRegex& regex, absl::string_view text,
                                       absl::string_view content, size_t limit, bool* deleted_start) {
  absl::StatusOr<std::vector<Span>> spans = SpansOfRegex(regex, text);
  if (!spans.ok()) return spans.status();
  if (deleted_start != nullptr) {
    // tokenizers aligns a replacement with the last character it replaces,
    // so the text's start moves unless a match there is one character.
    const Span& first = spans->front();
    size_t first_length = 0;
    if (first.is_match && first.end > first.begin) DecodeUtf8At(text, first.begin, &first_length);
    *deleted_start = first.is_match && first.end > first.begin &&
                     (content.empty() || first.begin + first_length < first.end);
  }
  std::string out;
  for (const Span& s : *spans) {
    if (s.is_match) {
      absl::StrAppend(&out, content);
    } else {
      absl::StrAppend(&out, text.substr(s.begin, s.end - s.begin));
    }
    if (out.size() > limit) {
      return absl::InvalidArgumentError(absl::StrCat("replacing ", regex.pattern().substr(0, 60),
                                                     " would make a ", text.size(), "-byte text longer than ",
                                                     limit, " bytes"));
    }
  }
  return out;
}

}  // namespace kiln::models
