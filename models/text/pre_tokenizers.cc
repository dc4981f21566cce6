#include "models/text/pre_tokenizers.h"

#include <functional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "models/text/byte_level.h"
#include "models/text/normalizers.h"
#include "models/text/split_spans.h"
#include "models/text/unicode_chars.h"

namespace kiln::models {
namespace {

using Ranges = std::vector<std::pair<size_t, size_t>>;

// Replaces each text piece by the non-empty sub-pieces `split` cuts it into.
absl::Status SplitEach(std::vector<TextPiece>* pieces,
                       const std::function<absl::StatusOr<Ranges>(std::string* text, bool at_start)>& split) {
  std::vector<TextPiece> out;
  out.reserve(pieces->size());
  for (TextPiece& piece : *pieces) {
    if (piece.token_id >= 0) {
      out.push_back(std::move(piece));
      continue;
    }
    absl::StatusOr<Ranges> ranges = split(&piece.text, piece.at_input_start);
    if (!ranges.ok()) return ranges.status();
    for (const auto& [begin, end] : *ranges) {
      if (begin >= end) continue;
      TextPiece sub;
      sub.text = piece.text.substr(begin, end - begin);
      sub.at_input_start = piece.at_input_start && begin == 0;
      out.push_back(std::move(sub));
    }
  }
  *pieces = std::move(out);
  return absl::OkStatus();
}

Ranges Whole(const std::string& text) { return {{0, text.size()}}; }

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, std::unique_ptr<UnicodeRegex> split)
      : add_prefix_space_(add_prefix_space), split_(std::move(split)) {}
  absl::Status Apply(std::vector<TextPiece>* pieces) const override {
    absl::Status s = SplitEach(pieces, [&](std::string* text, bool) -> absl::StatusOr<Ranges> {
      if (add_prefix_space_ && !absl::StartsWith(*text, " ")) text->insert(0, " ");
      if (split_ == nullptr) return Whole(*text);
      absl::StatusOr<std::vector<Span>> spans = SpansOfRegex(*split_, *text);
      if (!spans.ok()) return spans.status();
      return ApplySplitBehavior(*spans, SplitBehavior::kIsolated);
    });
    if (!s.ok()) return s;
    for (TextPiece& piece : *pieces) {
      if (piece.token_id >= 0) continue;
      std::string mapped;
      AppendByteLevel(piece.text, &mapped);
      piece.text = std::move(mapped);
    }
    return absl::OkStatus();
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<UnicodeRegex> split_;  // null without use_regex
};

class Split : public PreTokenizer {
 public:
  Split(std::unique_ptr<UnicodeRegex> pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  absl::Status Apply(std::vector<TextPiece>* pieces) const override {
    return SplitEach(pieces, [&](std::string* text, bool) -> absl::StatusOr<Ranges> {
      absl::StatusOr<std::vector<Span>> spans = SpansOfRegex(*pattern_, *text);
      if (!spans.ok()) return spans.status();
      if (invert_) {
        for (Span& span : *spans) span.is_match = !span.is_match;
      }
      return ApplySplitBehavior(*spans, behavior_);
    });
  }

 private:
  std::unique_ptr<UnicodeRegex> pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// Digits, Punctuation and WhitespaceSplit: a split on a character class.
class CharacterSplit : public PreTokenizer {
 public:
  CharacterSplit(std::function<bool(int32_t)> predicate, SplitBehavior behavior)
      : predicate_(std::move(predicate)), behavior_(behavior) {}
  absl::Status Apply(std::vector<TextPiece>* pieces) const override {
    return SplitEach(pieces, [&](std::string* text, bool) -> absl::StatusOr<Ranges> {
      return ApplySplitBehavior(SpansOfCharacters(*text, predicate_), behavior_);
    });
  }

 private:
  std::function<bool(int32_t)> predicate_;
  SplitBehavior behavior_;
};

class Metaspace : public PreTokenizer {
 public:
  explicit Metaspace(MetaspaceOptions options) : options_(std::move(options)) {}
  absl::Status Apply(std::vector<TextPiece>* pieces) const override {
    const std::string& mark = options_.replacement;
    return SplitEach(pieces, [&](std::string* text, bool at_start) -> absl::StatusOr<Ranges> {
      *text = absl::StrReplaceAll(*text, {{" ", mark}});
      const bool prepend = options_.prepend == MetaspaceOptions::Prepend::kAlways ||
                           (options_.prepend == MetaspaceOptions::Prepend::kFirst && at_start);
      if (prepend && !absl::StartsWith(*text, mark)) text->insert(0, mark);
      if (!options_.split) return Whole(*text);
      int32_t mark_cp = 0;
      size_t length = 0;
      mark_cp = DecodeUtf8At(mark, 0, &length);
      return ApplySplitBehavior(SpansOfCharacters(*text, [mark_cp](int32_t cp) { return cp == mark_cp; }),
                                SplitBehavior::kMergedWithNext);
    });
  }

 private:
  MetaspaceOptions options_;
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  absl::Status Apply(std::vector<TextPiece>* pieces) const override {
    for (const auto& part : parts_) {
      if (absl::Status s = part->Apply(pieces); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

absl::StatusOr<std::unique_ptr<UnicodeRegex>> BuiltInRegex(absl::string_view pattern) {
  absl::StatusOr<std::unique_ptr<UnicodeRegex>> regex = UnicodeRegex::FromOniguruma(pattern);
  if (!regex.ok()) return absl::InternalError(absl::StrCat("built-in pattern: ", regex.status().message()));
  return regex;
}

absl::StatusOr<SplitBehavior> BehaviorField(const JsonNode& node, SplitBehavior fallback) {
  if (!node.Has("behavior")) return fallback;
  absl::StatusOr<std::string> name = node.Field("behavior").AsString();
  if (!name.ok()) return name.status();
  absl::StatusOr<SplitBehavior> behavior = ParseSplitBehavior(*name);
  if (!behavior.ok()) return node.Field("behavior").Invalid(behavior.status().message());
  return behavior;
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseByteLevel(const JsonNode& node) {
  absl::StatusOr<bool> prefix = node.Bool("add_prefix_space", true);
  if (!prefix.ok()) return prefix.status();
  absl::StatusOr<bool> use_regex = node.Bool("use_regex", true);
  if (!use_regex.ok()) return use_regex.status();
  std::unique_ptr<UnicodeRegex> split;
  if (*use_regex) {
    absl::StatusOr<std::unique_ptr<UnicodeRegex>> regex = BuiltInRegex(kGpt2SplitPattern);
    if (!regex.ok()) return regex.status();
    split = *std::move(regex);
  }
  return std::make_unique<ByteLevel>(*prefix, std::move(split));
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseSplit(const JsonNode& node) {
  if (!node.Has("pattern")) return node.Field("pattern").Invalid("is missing");
  absl::StatusOr<std::unique_ptr<UnicodeRegex>> pattern = ParsePattern(node.Field("pattern"));
  if (!pattern.ok()) return pattern.status();
  if (!node.Has("behavior")) return node.Field("behavior").Invalid("is missing");
  absl::StatusOr<SplitBehavior> behavior = BehaviorField(node, SplitBehavior::kIsolated);
  if (!behavior.ok()) return behavior.status();
  absl::StatusOr<bool> invert = node.Bool("invert", false);
  if (!invert.ok()) return invert.status();
  return std::make_unique<Split>(*std::move(pattern), *behavior, *invert);
}

}  // namespace

absl::StatusOr<MetaspaceOptions> ParseMetaspaceOptions(const JsonNode& node) {
  MetaspaceOptions options;
  absl::StatusOr<std::string> replacement = node.Has("replacement")
                                                ? node.Field("replacement").AsChar()
                                                : node.Field("replacement").Invalid("is missing");
  if (!replacement.ok()) return replacement.status();
  options.replacement = *std::move(replacement);
  bool has_scheme = false;
  if (node.Has("prepend_scheme")) {
    absl::StatusOr<std::string> scheme = node.Field("prepend_scheme").AsString();
    if (!scheme.ok()) return scheme.status();
    if (*scheme == "always") {
      options.prepend = MetaspaceOptions::Prepend::kAlways;
    } else if (*scheme == "first") {
      options.prepend = MetaspaceOptions::Prepend::kFirst;
    } else if (*scheme == "never") {
      options.prepend = MetaspaceOptions::Prepend::kNever;
    } else {
      return node.Field("prepend_scheme")
          .Invalid(absl::StrCat("\"", *scheme, "\" is not always, first or never"));
    }
    has_scheme = true;
  }
  absl::StatusOr<bool> add_prefix_space = node.Bool("add_prefix_space", true);
  if (!add_prefix_space.ok()) return add_prefix_space.status();
  if (!*add_prefix_space) {
    if (has_scheme && options.prepend != MetaspaceOptions::Prepend::kNever) {
      return node.Field("add_prefix_space").Invalid("is false, which contradicts prepend_scheme");
    }
    options.prepend = MetaspaceOptions::Prepend::kNever;
  }
  absl::StatusOr<bool> split = node.Bool("split", true);
  if (!split.ok()) return split.status();
  options.split = *split;
  return options;
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const JsonNode& node, int depth) {
  if (node.value().is_null()) return nullptr;
  if (depth > kMaxComponentDepth) return node.Invalid(absl::StrCat("nests deeper than ", kMaxComponentDepth));
  absl::StatusOr<std::string> type = node.Type();
  if (!type.ok()) return type.status();
  if (*type == "ByteLevel") return ParseByteLevel(node);
  if (*type == "Split") return ParseSplit(node);
  if (*type == "Metaspace") {
    absl::StatusOr<MetaspaceOptions> options = ParseMetaspaceOptions(node);
    if (!options.ok()) return options.status();
    return std::make_unique<Metaspace>(*std::move(options));
  }
  if (*type == "Whitespace") {
    // tokenizers keeps the matches of \w+|[^\w\s]+ in the regex crate's
    // classes (Alphabetic, marks, Nd, Pc, joiners; White_Space), not
    // Oniguruma's.
    absl::StatusOr<std::unique_ptr<UnicodeRegex>> words = BuiltInRegex(
        "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]+|"
        "[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}\\p{White_Space}]+");
    if (!words.ok()) return words.status();
    return std::make_unique<Split>(*std::move(words), SplitBehavior::kRemoved, /*invert=*/true);
  }
  if (*type == "WhitespaceSplit") {
    return std::make_unique<CharacterSplit>(IsWhitespace, SplitBehavior::kRemoved);
  }
  if (*type == "Digits") {
    absl::StatusOr<bool> individual = node.Bool("individual_digits", false);
    if (!individual.ok()) return individual.status();
    return std::make_unique<CharacterSplit>(
        IsNumeric, *individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }
  if (*type == "Punctuation") {
    absl::StatusOr<SplitBehavior> behavior = BehaviorField(node, SplitBehavior::kIsolated);
    if (!behavior.ok()) return behavior.status();
    return std::make_unique<CharacterSplit>(IsPunctuation, *behavior);
  }
  if (*type == "Sequence") {
    absl::StatusOr<std::vector<std::unique_ptr<PreTokenizer>>> parts = ParseComponents<PreTokenizer>(
        node, "pretokenizers", [&](const JsonNode& part) { return ParsePreTokenizer(part, depth + 1); });
    if (!parts.ok()) return parts.status();
    return std::make_unique<Sequence>(*std::move(parts));
  }
  return node.UnsupportedType(*type);
}

}  // namespace kiln::models
