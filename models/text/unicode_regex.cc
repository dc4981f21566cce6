#include "models/text/unicode_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "absl/strings/str_cat.h"
#include "models/text/unicode_chars.h"

namespace kiln::models {
namespace {

// Oniguruma's classes under Unicode (its doc/RE): \s is 0009-000D, 0085 and
// Z; \w is L, M, N and Pc. PCRE2 (10.42) adds U+180E to \s and leaves marks
// out of \w.
constexpr absl::string_view kSpaceMembers = "\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}";
constexpr absl::string_view kWordMembers = "\\p{L}\\p{M}\\p{N}\\p{Pc}";
constexpr absl::string_view kHexMembers = "0-9a-fA-F";

// A pattern longer than this is refused rather than compiled: no tokenizer
// needs one, and PCRE2's compile time grows with it.
constexpr size_t kMaxPatternBytes = 1 << 16;
// Bounds on one match attempt, so a pattern that backtracks badly fails
// instead of hanging.
constexpr uint32_t kMatchLimit = 10'000'000;
constexpr uint32_t kDepthLimit = 100'000;

// Appends the PCRE2 form of the escape `\letter`, or returns false when it
// needs no rewrite.
bool AppendClassEscape(char letter, bool in_class, std::string* out) {
  absl::string_view members;
  bool negated = false;
  switch (letter) {
    case 's':
      members = kSpaceMembers;
      break;
    case 'S':
      members = kSpaceMembers;
      negated = true;
      break;
    case 'w':
      members = kWordMembers;
      break;
    case 'W':
      members = kWordMembers;
      negated = true;
      break;
    case 'h':
      members = kHexMembers;
      break;
    case 'H':
      members = kHexMembers;
      negated = true;
      break;
    default:
      return false;
  }
  if (in_class) {
    // A negated class cannot be a member of another class in PCRE2: the
    // escape keeps PCRE2's own meaning there (rarely different).
    if (negated) return false;
    absl::StrAppend(out, members);
  } else {
    absl::StrAppend(out, negated ? "[^" : "[", members, "]");
  }
  return true;
}

// Rewrites Ruby's option letters in "(?imx-imx:" / "(?imx)": m is dot-all
// there, s in PCRE2. Returns the bytes consumed, 0 when `rest` is no such
// group.
size_t AppendOptionGroup(absl::string_view rest, std::string* out) {
  if (rest.size() < 3 || rest[0] != '(' || rest[1] != '?') return 0;
  size_t i = 2;
  while (i < rest.size() && (rest[i] == 'i' || rest[i] == 'm' || rest[i] == 'x' || rest[i] == '-')) ++i;
  if (i == 2 || i >= rest.size() || (rest[i] != ':' && rest[i] != ')')) return 0;
  out->append("(?");
  for (size_t k = 2; k < i; ++k) out->push_back(rest[k] == 'm' ? 's' : rest[k]);
  out->push_back(rest[i]);
  return i + 1;
}

struct MatchState {
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_data* data = nullptr;
  MatchState() {
    context = pcre2_match_context_create(nullptr);
    pcre2_set_match_limit(context, kMatchLimit);
    pcre2_set_depth_limit(context, kDepthLimit);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
    // One pair is all FindAll reads; a match with more groups still fills it.
    data = pcre2_match_data_create(1, nullptr);
  }
  ~MatchState() {
    pcre2_match_data_free(data);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
  }
};

MatchState& ThreadMatchState() {
  thread_local MatchState state;
  return state;
}

}  // namespace

std::string OnigurumaToPcre2(absl::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  bool in_class = false;
  size_t i = 0;
  while (i < pattern.size()) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      if (!AppendClassEscape(pattern[i + 1], in_class, &out)) absl::StrAppend(&out, pattern.substr(i, 2));
      i += 2;
      continue;
    }
    if (in_class) {
      if (c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {  // [:alpha:]
        const size_t close = pattern.find(":]", i + 2);
        if (close != absl::string_view::npos) {
          absl::StrAppend(&out, pattern.substr(i, close + 2 - i));
          i = close + 2;
          continue;
        }
      }
      if (c == ']') in_class = false;
      out.push_back(c);
      ++i;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out.push_back(c);
      ++i;
      if (i < pattern.size() && pattern[i] == '^') out.push_back(pattern[i++]);
      if (i < pattern.size() && pattern[i] == ']') out.push_back(pattern[i++]);  // a literal ]
      continue;
    }
    if (c == '(') {
      if (const size_t used = AppendOptionGroup(pattern.substr(i), &out); used > 0) {
        i += used;
        continue;
      }
    }
    out.push_back(c);
    ++i;
  }
  return out;
}

UnicodeRegex::~UnicodeRegex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

absl::StatusOr<std::unique_ptr<UnicodeRegex>> UnicodeRegex::FromOniguruma(absl::string_view pattern) {
  return Compile(pattern, /*literal=*/false);
}

absl::StatusOr<std::unique_ptr<UnicodeRegex>> UnicodeRegex::Literal(absl::string_view text) {
  return Compile(text, /*literal=*/true);
}

absl::StatusOr<std::unique_ptr<UnicodeRegex>> UnicodeRegex::Compile(absl::string_view pattern, bool literal) {
  if (pattern.size() > kMaxPatternBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("pattern of ", pattern.size(), " bytes is longer than ", kMaxPatternBytes));
  }
  if (!IsValidUtf8(pattern)) return absl::InvalidArgumentError("pattern is not valid UTF-8");
  const std::string translated = literal ? std::string(pattern) : OnigurumaToPcre2(pattern);
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  // Oniguruma's ^ and $ match at every line, as PCRE2's multiline mode does.
  const uint32_t options = literal ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE;
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   options, &error, &offset, context);
  pcre2_compile_context_free(context);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return absl::InvalidArgumentError(absl::StrCat(
        "pattern does not compile (", reinterpret_cast<char*>(message), " at offset ", offset, ")"));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // where JIT is missing, the interpreter runs
  std::unique_ptr<UnicodeRegex> regex(new UnicodeRegex());
  regex->pattern_ = std::string(pattern);
  regex->code_ = code;
  return regex;
}

absl::Status UnicodeRegex::FindAll(absl::string_view text,
                                   std::vector<std::pair<size_t, size_t>>* matches) const {
  matches->clear();
  MatchState& state = ThreadMatchState();
  if (state.data == nullptr || state.context == nullptr) {
    return absl::ResourceExhaustedError("PCRE2 is out of memory");
  }
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t search_from = 0;
  bool matched_before = false;
  size_t last_match_end = 0;
  while (search_from <= text.size()) {
    // The text was checked once; PCRE2 would otherwise check it all again
    // on every call.
    const int rc = pcre2_match(static_cast<const pcre2_code*>(code_), subject, text.size(), search_from,
                               PCRE2_NO_UTF_CHECK, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      return absl::InvalidArgumentError(absl::StrCat("regex ", pattern_.substr(0, 60), " failed on a ",
                                                     text.size(),
                                                     "-byte text: ", reinterpret_cast<char*>(message)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ovector[0], end = ovector[1];
    if (begin == end && matched_before && last_match_end == end) {
      size_t step = 1;
      if (search_from < text.size()) DecodeUtf8At(text, search_from, &step);
      search_from += step;
      continue;
    }
    matches->emplace_back(begin, end);
    search_from = end;
    matched_before = true;
    last_match_end = end;
  }
  return absl::OkStatus();
}

}  // namespace kiln::models
