// The regexes of tokenizer.json (Split, Replace), matched with PCRE2 as the
// tokenizers library matches them with Oniguruma.
#ifndef KILN_MODELS_TEXT_UNICODE_REGEX_H_
#define KILN_MODELS_TEXT_UNICODE_REGEX_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::models {

// Rewrites an Oniguruma (Ruby syntax) pattern into PCRE2 syntax with the same
// meaning where the two differ: \s, \w and \h (Unicode classes that PCRE2
// draws differently, \h being a hex digit in Ruby) and (?m) (dot-all in Ruby).
std::string OnigurumaToPcre2(absl::string_view pattern);

class UnicodeRegex {
 public:
  ~UnicodeRegex();
  UnicodeRegex(const UnicodeRegex&) = delete;
  UnicodeRegex& operator=(const UnicodeRegex&) = delete;

  // An Oniguruma-syntax pattern (tokenizers' {"Regex": ...}). InvalidArgument
  // with PCRE2's message and offset when it does not compile.
  static absl::StatusOr<std::unique_ptr<UnicodeRegex>> FromOniguruma(absl::string_view pattern);
  // Text matched literally (tokenizers' {"String": ...}).
  static absl::StatusOr<std::unique_ptr<UnicodeRegex>> Literal(absl::string_view text);

  // The [begin, end) byte ranges of the matches in `text` (valid UTF-8), in
  // the order and with the empty-match rule of the onig crate's find_iter: an
  // empty match right where the previous match ended is skipped and the
  // search goes on one character later. InvalidArgument when PCRE2 gives up
  // (match or depth limit), so a hostile pattern cannot hang encoding.
  absl::Status FindAll(absl::string_view text, std::vector<std::pair<size_t, size_t>>* matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  UnicodeRegex() = default;
  static absl::StatusOr<std::unique_ptr<UnicodeRegex>> Compile(absl::string_view pattern, bool literal);

  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8, kept out of the header
};

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_UNICODE_REGEX_H_
