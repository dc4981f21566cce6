#include "models/text/normalizers.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "models/text/split_spans.h"
#include "models/text/unicode_chars.h"

namespace kiln::models {
namespace {

bool IsAscii(const std::string& text) {
  for (const char c : text) {
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  }
  return true;
}

absl::Status TooLong(size_t limit) {
  return absl::InvalidArgumentError(absl::StrCat("normalized text would be longer than ", limit, " bytes"));
}

// NFC, NFD, NFKC, NFKD by utf8proc.
class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(int options) : options_(options) {}
  absl::Status Apply(std::string* text, State* /*state*/) const override {
    if (IsAscii(*text)) return absl::OkStatus();  // ASCII is in every form already
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text->data()),
                                            static_cast<utf8proc_ssize_t>(text->size()), &out,
                                            static_cast<utf8proc_option_t>(options_));
    if (n < 0) {
      return absl::InvalidArgumentError(absl::StrCat("Unicode normalization failed: ", utf8proc_errmsg(n)));
    }
    text->assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
    return absl::OkStatus();
  }

 private:
  int options_;
};

class Lowercase : public Normalizer {
 public:
  absl::Status Apply(std::string* text, State* /*state*/) const override {
    std::string out;
    out.reserve(text->size());
    size_t i = 0;
    while (i < text->size()) {
      const char c = (*text)[i];
      if (static_cast<uint8_t>(c) < 0x80) {
        out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
        ++i;
        continue;
      }
      size_t length = 1;
      const int32_t cp = DecodeUtf8At(*text, i, &length);
      if (cp < 0) {
        out.push_back(c);
      } else {
        AppendLowercase(cp, &out);
      }
      i += length;
    }
    *text = std::move(out);
    return absl::OkStatus();
  }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  absl::Status Apply(std::string* text, State* state) const override {
    size_t begin = 0, end = text->size();
    if (left_) {
      while (begin < end) {
        size_t length = 1;
        if (!IsWhitespace(DecodeUtf8At(*text, begin, &length))) break;
        begin += length;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;  // back to the last character's first byte
        while (start > begin && (static_cast<uint8_t>((*text)[start]) & 0xC0) == 0x80) --start;
        size_t length = 1;
        if (!IsWhitespace(DecodeUtf8At(*text, start, &length))) break;
        end = start;
      }
    }
    if (begin > 0) state->dropped_start = true;
    *text = text->substr(begin, end - begin);
    return absl::OkStatus();
  }

 private:
  bool left_, right_;
};

class Replace : public Normalizer {
 public:
  Replace(std::unique_ptr<UnicodeRegex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  absl::Status Apply(std::string* text, State* state) const override {
    bool deleted_start = false;
    absl::StatusOr<std::string> out = ReplaceAll(*pattern_, *text, content_, state->limit, &deleted_start);
    if (deleted_start) state->dropped_start = true;
    if (!out.ok()) return out.status();
    *text = *std::move(out);
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<UnicodeRegex> pattern_;
  std::string content_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  absl::Status Apply(std::string* text, State* /*state*/) const override {
    if (!text->empty()) text->insert(0, prefix_);
    return absl::OkStatus();
  }

 private:
  std::string prefix_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  absl::Status Apply(std::string* text, State* state) const override {
    for (const auto& part : parts_) {
      if (absl::Status s = part->Apply(text, state); !s.ok()) return s;
      if (text->size() > state->limit) return TooLong(state->limit);
    }
    return absl::OkStatus();
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

absl::Status Normalizer::Normalize(std::string* text, bool* dropped_start) const {
  // Far above what any real normalizer does (NFKD at most ~18x one character).
  State state{64 * text->size() + 4096};
  if (absl::Status s = Apply(text, &state); !s.ok()) return s;
  if (text->size() > state.limit) return TooLong(state.limit);
  if (dropped_start != nullptr) *dropped_start = state.dropped_start;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const JsonNode& node, int depth) {
  if (node.value().is_null()) return nullptr;
  if (depth > kMaxComponentDepth) return node.Invalid(absl::StrCat("nests deeper than ", kMaxComponentDepth));
  absl::StatusOr<std::string> type = node.Type();
  if (!type.ok()) return type.status();
  if (*type == "NFC") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (*type == "NFD") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  if (*type == "NFKC") {
    return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  }
  if (*type == "NFKD") {
    return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  }
  if (*type == "Lowercase") return std::make_unique<Lowercase>();
  if (*type == "Strip") {
    absl::StatusOr<bool> left = node.Bool("strip_left", true);
    if (!left.ok()) return left.status();
    absl::StatusOr<bool> right = node.Bool("strip_right", true);
    if (!right.ok()) return right.status();
    return std::make_unique<Strip>(*left, *right);
  }
  if (*type == "Replace") {
    if (!node.Has("pattern")) return node.Field("pattern").Invalid("is missing");
    absl::StatusOr<std::unique_ptr<UnicodeRegex>> pattern = ParsePattern(node.Field("pattern"));
    if (!pattern.ok()) return pattern.status();
    absl::StatusOr<std::string> content = node.String("content");
    if (!content.ok()) return content.status();
    return std::make_unique<Replace>(*std::move(pattern), *std::move(content));
  }
  if (*type == "Prepend") {
    absl::StatusOr<std::string> prefix = node.String("prepend");
    if (!prefix.ok()) return prefix.status();
    return std::make_unique<Prepend>(*std::move(prefix));
  }
  if (*type == "Sequence") {
    absl::StatusOr<std::vector<std::unique_ptr<Normalizer>>> parts = ParseComponents<Normalizer>(
        node, "normalizers", [&](const JsonNode& part) { return ParseNormalizer(part, depth + 1); });
    if (!parts.ok()) return parts.status();
    return std::make_unique<Sequence>(*std::move(parts));
  }
  return node.UnsupportedType(*type);
}

}  // namespace kiln::models
