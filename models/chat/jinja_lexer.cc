#include "models/chat/jinja_lexer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_string_literal.h"
#include "models/chat/jinja_unicode.h"

namespace kiln::models::jinja {

SourceMap::SourceMap(absl::string_view source) : source_(source) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\n') line_starts_.push_back(i + 1);
  }
}

int SourceMap::Line(size_t offset) const {
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return static_cast<int>(it - line_starts_.begin());
}

int SourceMap::Column(size_t offset) const {
  const size_t start = line_starts_[static_cast<size_t>(Line(offset) - 1)];
  offset = std::min(offset, source_.size());
  return static_cast<int>(CodePointCount(source_.substr(start, offset - start))) + 1;
}

std::string SourceMap::Describe(size_t offset) const {
  return absl::StrCat("line ", Line(offset), ", column ", Column(offset));
}

std::string NormalizeSource(absl::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

class Lexer {
 public:
  explicit Lexer(absl::string_view source) : s_(source), map_(source) {}

  absl::StatusOr<std::vector<Token>> Run() {
    while (pos_ < s_.size()) {
      absl::Status status = LexRoot();
      if (!status.ok()) return status;
    }
    Emit(TokenType::kEof, "", s_.size());
    return std::move(tokens_);
  }

 private:
  enum class Tag { kRaw, kComment, kBlock, kVariable };

  absl::Status Error(size_t offset, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("jinja: ", map_.Describe(offset), ": ", message));
  }

  void Emit(TokenType type, std::string value, size_t offset) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.offset = offset;
    tokens_.push_back(std::move(t));
  }

  bool StartsWith(size_t at, absl::string_view what) const {
    return at <= s_.size() && s_.substr(at).substr(0, what.size()) == what;
  }

  // Python's \s*.
  size_t SkipSpace(size_t at) const {
    while (at < s_.size()) {
      size_t next = at;
      if (!IsSpace(NextCodePoint(s_, &next))) break;
      at = next;
    }
    return at;
  }

  // The end of `{%[-+]?\s*raw\s*(-%}\s*|%})` at `at`, if it is there.
  std::optional<size_t> MatchRawBegin(size_t at) const {
    size_t q = at + 2;
    if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ++q;
    q = SkipSpace(q);
    if (!StartsWith(q, "raw")) return std::nullopt;
    q = SkipSpace(q + 3);
    if (StartsWith(q, "-%}")) return SkipSpace(q + 3);
    if (StartsWith(q, "%}")) return q + 2;
    return std::nullopt;
  }

  // The text before a tag, with the tag's whitespace control applied:
  // `-` strips all whitespace before it; otherwise lstrip_blocks removes
  // spaces and tabs between the line start and a block or comment tag.
  void EmitText(size_t begin, size_t end, char sign, bool is_variable) {
    absl::string_view text = s_.substr(begin, end - begin);
    if (sign == '-') {
      const std::string stripped = Strip(text, nullptr, false, true);
      text = text.substr(0, stripped.size());
    } else if (sign != '+' && !is_variable) {
      const size_t newline = text.rfind('\n');
      const size_t line_begin = newline == absl::string_view::npos ? 0 : newline + 1;
      if (line_begin > 0 || line_starting_) {
        const absl::string_view tail = text.substr(line_begin);
        if (std::all_of(tail.begin(), tail.end(), [](char c) { return c == ' ' || c == '\t'; })) {
          text = text.substr(0, line_begin);
        }
      }
    }
    if (!text.empty()) Emit(TokenType::kData, std::string(text), begin);
  }

  absl::Status LexRoot() {
    for (size_t p = s_.find('{', pos_); p != absl::string_view::npos; p = s_.find('{', p + 1)) {
      if (p + 1 >= s_.size()) break;
      const char c = s_[p + 1];
      std::optional<Tag> tag;
      std::optional<size_t> raw_end;
      if (c == '%' && (raw_end = MatchRawBegin(p))) {
        tag = Tag::kRaw;
      } else if (c == '#') {
        tag = Tag::kComment;
      } else if (c == '%') {
        tag = Tag::kBlock;
      } else if (c == '{') {
        tag = Tag::kVariable;
      }
      if (!tag) continue;
      const char sign = (p + 2 < s_.size() && (s_[p + 2] == '-' || s_[p + 2] == '+')) ? s_[p + 2] : 0;
      EmitText(pos_, p, sign, *tag == Tag::kVariable);
      switch (*tag) {
        case Tag::kRaw:
          pos_ = *raw_end;
          line_starting_ = s_[pos_ - 1] == '\n';
          return LexRaw();
        case Tag::kComment:
          pos_ = p + 2 + (sign ? 1 : 0);
          return LexComment(p);
        case Tag::kBlock:
          Emit(TokenType::kBlockBegin, "", p);
          pos_ = p + 2 + (sign ? 1 : 0);
          return LexTag(false);
        case Tag::kVariable:
          Emit(TokenType::kVariableBegin, "", p);
          pos_ = p + 2 + (sign ? 1 : 0);
          return LexTag(true);
      }
    }
    Emit(TokenType::kData, std::string(s_.substr(pos_)), pos_);
    pos_ = s_.size();
    return absl::OkStatus();
  }

  // After a `%}` or `#}`: `-` eats the whitespace that follows, trim_blocks
  // one newline, `+` nothing. Returns the offset after it.
  size_t AfterBlockEnd(size_t at, char sign) const {
    if (sign == '-') return SkipSpace(at);
    if (sign == '+') return at;
    return (at < s_.size() && s_[at] == '\n') ? at + 1 : at;
  }

  absl::Status LexComment(size_t begin) {
    for (size_t k = s_.find("#}", pos_); k != absl::string_view::npos; k = s_.find("#}", k + 1)) {
      char sign = 0;
      if (k > pos_ && (s_[k - 1] == '-' || s_[k - 1] == '+')) sign = s_[k - 1];
      pos_ = AfterBlockEnd(k + 2, sign);
      line_starting_ = s_[pos_ - 1] == '\n';
      return absl::OkStatus();
    }
    return Error(begin, "Missing end of comment tag");
  }

  absl::Status LexRaw() {
    for (size_t k = s_.find("{%", pos_); k != absl::string_view::npos; k = s_.find("{%", k + 1)) {
      size_t q = k + 2;
      char sign = 0;
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) sign = s_[q++];
      q = SkipSpace(q);
      if (!StartsWith(q, "endraw")) continue;
      q = SkipSpace(q + 6);
      char end_sign = 0;
      if (StartsWith(q, "+%}") || StartsWith(q, "-%}")) {
        end_sign = s_[q];
        q += 3;
      } else if (StartsWith(q, "%}")) {
        q += 2;
      } else {
        continue;
      }
      EmitText(pos_, k, sign, false);
      pos_ = AfterBlockEnd(q, end_sign);
      line_starting_ = s_[pos_ - 1] == '\n';
      return absl::OkStatus();
    }
    return Error(pos_, "Missing end of raw directive");
  }

  // The tag's end at pos_, if there: returns whether it consumed one.
  bool LexTagEnd(bool variable) {
    if (!balance_.empty()) return false;
    size_t end = 0;
    if (variable) {
      if (StartsWith(pos_, "-}}")) {
        end = SkipSpace(pos_ + 3);
      } else if (StartsWith(pos_, "}}")) {
        end = pos_ + 2;
      } else {
        return false;
      }
    } else {
      char sign = 0;
      size_t after = 0;
      if (StartsWith(pos_, "+%}") || StartsWith(pos_, "-%}")) {
        sign = s_[pos_];
        after = pos_ + 3;
      } else if (StartsWith(pos_, "%}")) {
        after = pos_ + 2;
      } else {
        return false;
      }
      end = AfterBlockEnd(after, sign);
    }
    Emit(variable ? TokenType::kVariableEnd : TokenType::kBlockEnd, "", pos_);
    pos_ = end;
    line_starting_ = s_[pos_ - 1] == '\n';
    return true;
  }

  absl::Status LexTag(bool variable) {
    while (pos_ < s_.size()) {
      if (LexTagEnd(variable)) return absl::OkStatus();
      const size_t space_end = SkipSpace(pos_);
      if (space_end != pos_) {
        pos_ = space_end;
        continue;
      }
      absl::Status status = LexTagToken();
      if (!status.ok()) return status;
    }
    return absl::OkStatus();  // the parser reports the missing end
  }

  // `(\d+_)*\d+` at `at`: returns its end, or `at` when there is no digit.
  size_t MatchDigits(size_t at, bool hex = false, char max_digit = '9') const {
    const auto ok = [&](size_t i) {
      if (i >= s_.size()) return false;
      const char c = s_[i];
      if (hex && ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')) return true;
      return c >= '0' && c <= max_digit;
    };
    if (!ok(at)) return at;
    size_t i = at;
    while (ok(i)) ++i;
    while (i + 1 < s_.size() && s_[i] == '_' && ok(i + 1)) {
      ++i;
      while (ok(i)) ++i;
    }
    return i;
  }

  std::optional<size_t> MatchFloat() const {
    if (pos_ > 0 && s_[pos_ - 1] == '.') return std::nullopt;
    const size_t int_end = MatchDigits(pos_);
    if (int_end == pos_) return std::nullopt;
    size_t i = int_end;
    // Fraction then exponent, or just a fraction.
    if (i < s_.size() && s_[i] == '.') {
      const size_t frac_end = MatchDigits(i + 1);
      if (frac_end != i + 1) i = frac_end;
    }
    if (i < s_.size() && (s_[i] | 0x20) == 'e') {
      size_t e = i + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      const size_t exp_end = MatchDigits(e);
      if (exp_end != e) return exp_end;
    }
    if (i != int_end) return i;
    return std::nullopt;
  }

  // Returns the end of the integer literal and its base.
  std::optional<std::pair<size_t, int>> MatchInteger() const {
    if (s_[pos_] == '0' && pos_ + 1 < s_.size()) {
      const char p = static_cast<char>(s_[pos_ + 1] | 0x20);
      const int base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 0;
      if (base != 0) {
        // 0b(_?[01])+ and friends: an underscore may lead each digit.
        size_t i = pos_ + 2;
        const auto digit = [&](size_t k) {
          if (k >= s_.size()) return false;
          const char c = s_[k];
          if (base == 16) return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
          return c >= '0' && c < '0' + base;
        };
        size_t end = i;
        while (true) {
          size_t k = end;
          if (k < s_.size() && s_[k] == '_') ++k;
          if (!digit(k)) break;
          end = k + 1;
        }
        if (end != i) return std::make_pair(end, base);
      }
    }
    if (s_[pos_] >= '1' && s_[pos_] <= '9') return std::make_pair(MatchDigits(pos_), 10);
    if (s_[pos_] == '0') {
      size_t end = pos_ + 1;
      while (true) {
        size_t k = end;
        if (k < s_.size() && s_[k] == '_') ++k;
        if (k >= s_.size() || s_[k] != '0') break;
        end = k + 1;
      }
      return std::make_pair(end, 10);
    }
    return std::nullopt;
  }

  absl::Status LexNumber(size_t end, int base, bool is_float) {
    std::string digits;
    for (size_t i = pos_; i < end; ++i) {
      if (s_[i] != '_') digits.push_back(s_[i]);
    }
    Token t;
    t.offset = pos_;
    t.value = std::string(s_.substr(pos_, end - pos_));
    if (is_float) {
      t.type = TokenType::kFloat;
      const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), t.float_value);
      if (r.ec == std::errc::result_out_of_range) {
        // Python reads these as inf or as 0.0.
        const size_t e = digits.find_first_of("eE");
        const bool huge = e != std::string::npos && digits[e + 1] != '-';
        t.float_value = huge ? std::numeric_limits<double>::infinity() : 0.0;
      }
    } else {
      t.type = TokenType::kInteger;
      const size_t skip = base == 10 ? 0 : 2;
      uint64_t value = 0;
      const auto r = std::from_chars(digits.data() + skip, digits.data() + digits.size(), value, base);
      if (r.ec != std::errc() || value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Error(pos_, absl::StrCat("integer literal ", t.value, " does not fit in 64 bits"));
      }
      t.int_value = static_cast<int64_t>(value);
    }
    tokens_.push_back(std::move(t));
    pos_ = end;
    return absl::OkStatus();
  }

  absl::Status LexTagToken() {
    const char c = s_[pos_];
    if (IsDigit(c)) {
      if (std::optional<size_t> end = MatchFloat()) return LexNumber(*end, 10, true);
      if (auto integer = MatchInteger()) return LexNumber(integer->first, integer->second, false);
    }
    if (IsNameStart(c)) {
      size_t end = pos_;
      while (end < s_.size() && IsNameChar(s_[end])) ++end;
      Emit(TokenType::kName, std::string(s_.substr(pos_, end - pos_)), pos_);
      pos_ = end;
      return absl::OkStatus();
    }
    if (c == '\'' || c == '"') return LexString(c);
    return LexOperator();
  }

  absl::Status LexString(char quote) {
    size_t i = pos_ + 1;
    while (i < s_.size() && s_[i] != quote) i += s_[i] == '\\' ? 2 : 1;
    if (i >= s_.size()) return Error(pos_, absl::StrCat("unexpected char '", std::string(1, quote), "'"));
    absl::StatusOr<std::string> value = UnescapeStringLiteral(s_.substr(pos_ + 1, i - pos_ - 1));
    if (!value.ok()) return Error(pos_, value.status().message());
    Emit(TokenType::kString, *std::move(value), pos_);
    pos_ = i + 1;
    return absl::OkStatus();
  }

  absl::Status LexOperator() {
    static constexpr absl::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    static constexpr absl::string_view kOne = "+-/*%~[](){}|.:,;=<>";
    std::string op;
    for (absl::string_view two : kTwo) {
      if (StartsWith(pos_, two)) op = std::string(two);
    }
    if (op.empty() && kOne.find(s_[pos_]) != absl::string_view::npos) op = std::string(1, s_[pos_]);
    if (op.empty()) {
      size_t next = pos_;
      std::string ch;
      AppendCodePoint(NextCodePoint(s_, &next), &ch);
      return Error(pos_, absl::StrCat("unexpected char '", ch, "'"));
    }
    if (op == "(" || op == "[" || op == "{") {
      balance_.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
    } else if (op == ")" || op == "]" || op == "}") {
      if (balance_.empty()) return Error(pos_, absl::StrCat("unexpected '", op, "'"));
      const char expected = balance_.back();
      balance_.pop_back();
      if (expected != op[0]) {
        return Error(pos_, absl::StrCat("unexpected '", op, "', expected '", std::string(1, expected), "'"));
      }
    }
    Emit(TokenType::kOperator, op, pos_);
    pos_ += op.size();
    return absl::OkStatus();
  }

  absl::string_view s_;
  SourceMap map_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<char> balance_;
  std::vector<Token> tokens_;
};

}  // namespace

absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view source) {
  return Lexer(source).Run();
}

}  // namespace kiln::models::jinja
