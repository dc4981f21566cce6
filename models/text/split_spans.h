// How tokenizers cuts a string on a pattern: the string as spans that did or
// did not match (Pattern::find_matches), then the kept pieces by a
// SplitDelimiterBehavior (NormalizedString::split).
#ifndef KILN_MODELS_TEXT_SPLIT_SPANS_H_
#define KILN_MODELS_TEXT_SPLIT_SPANS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/text/json_node.h"
#include "models/text/unicode_regex.h"

namespace kiln::models {

struct Span {
  size_t begin = 0;
  size_t end = 0;
  bool is_match = false;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Parses tokenizers' spelling ("Removed", "Isolated", ...).
absl::StatusOr<SplitBehavior> ParseSplitBehavior(absl::string_view name);

// The spans of `text` around the regex's matches, covering all of it; an
// empty text is one empty non-matching span.
absl::StatusOr<std::vector<Span>> SpansOfRegex(const UnicodeRegex& regex, absl::string_view text);

// Every character for which `predicate` holds is a matching span of its own.
std::vector<Span> SpansOfCharacters(absl::string_view text, const std::function<bool(int32_t)>& predicate);

// The [begin, end) ranges kept when `spans` are cut by `behavior` (empty ones
// included; the caller drops them as tokenizers does).
std::vector<std::pair<size_t, size_t>> ApplySplitBehavior(const std::vector<Span>& spans,
                                                          SplitBehavior behavior);

// A tokenizer.json pattern: {"String": "..."} (literal) or {"Regex": "..."}
// (Oniguruma syntax). InvalidArgument naming the path when malformed or not
// compiling.
absl::StatusOr<std::unique_ptr<UnicodeRegex>> ParsePattern(const JsonNode& node);

// `text` with every match of `regex` replaced by `content`; InvalidArgument
// rather than a result longer than `limit` bytes. *deleted_start (if given):
// whether the result no longer starts where the text did, as tokenizers'
// alignments see it (a match at the start replaced by nothing, or a match of
// more than one character there).
absl::StatusOr<std::string> ReplaceAll(const UnicodeRegex& regex, absl::string_view text,
                                       absl::string_view content, size_t limit,
                                       bool* deleted_start = nullptr);

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_SPLIT_SPANS_H_
