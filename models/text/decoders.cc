#include "models/text/decoders.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "models/text/byte_level.h"
#include "models/text/normalizers.h"
#include "models/text/pre_tokenizers.h"
#include "models/text/split_spans.h"
#include "models/text/unicode_chars.h"
#include "models/text/utf8.h"

namespace kiln::models {
namespace {

constexpr absl::string_view kReplacementChar = "\xEF\xBF\xBD";

absl::Status TooLong(size_t limit) {
  return absl::InvalidArgumentError(absl::StrCat("decoded text would be longer than ", limit, " bytes"));
}

// All tokens become one string: each token's characters mapped back to
// bytes, or the token's own bytes where a character is outside the table.
class ByteLevelDecoder : public Decoder {
 public:
  absl::Status DecodeChain(std::vector<std::string>* tokens, size_t /*limit*/) const override {
    std::string bytes;
    for (const std::string& token : *tokens) {
      if (!DecodeByteLevel(token, &bytes)) bytes.append(token);
    }
    tokens->assign(1, std::move(bytes));
    return absl::OkStatus();
  }
};

// Runs of "<0xAB>" tokens become their bytes. A run that is not valid UTF-8
// becomes one U+FFFD per byte, as in tokenizers, except a run at the very end
// that only stops inside a character: its bytes are kept, so a stream can
// wait for the rest of the character.
class ByteFallbackDecoder : public Decoder {
 public:
  absl::Status DecodeChain(std::vector<std::string>* tokens, size_t /*limit*/) const override {
    std::vector<std::string> out;
    std::string run;
    const auto flush = [&](bool at_end) {
      if (run.empty()) return;
      const size_t complete = CompleteUtf8Prefix(run);
      if (IsValidUtf8(run) || (at_end && IsValidUtf8(absl::string_view(run).substr(0, complete)))) {
        out.push_back(run);
      } else {
        for (size_t k = 0; k < run.size(); ++k) out.emplace_back(kReplacementChar);
      }
      run.clear();
    };
    for (std::string& token : *tokens) {
      int byte = -1;
      if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>') {
        byte = HexByte(token[3], token[4]);
      }
      if (byte >= 0) {
        run.push_back(static_cast<char>(byte));
        continue;
      }
      flush(/*at_end=*/false);
      out.push_back(std::move(token));
    }
    flush(/*at_end=*/true);
    *tokens = std::move(out);
    return absl::OkStatus();
  }

 private:
  static int HexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // Rust's u8::from_str_radix(s, 16): two hex digits, or a '+' and one.
  static int HexByte(char hi, char lo) {
    const int l = HexDigit(lo);
    if (l < 0) return -1;
    if (hi == '+') return l;
    const int h = HexDigit(hi);
    return h < 0 ? -1 : h * 16 + l;
  }
};

class FuseDecoder : public Decoder {
 public:
  absl::Status DecodeChain(std::vector<std::string>* tokens, size_t /*limit*/) const override {
    tokens->assign(1, absl::StrJoin(*tokens, ""));
    return absl::OkStatus();
  }
};

// Cuts up to `start` leading and `stop` trailing `content` characters off
// each token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  absl::Status DecodeChain(std::vector<std::string>* tokens, size_t /*limit*/) const override {
    for (std::string& token : *tokens) {
      size_t begin = 0, end = token.size();
      for (size_t k = 0; k < start_ && token.compare(begin, content_.size(), content_) == 0; ++k) {
        begin += content_.size();
      }
      for (size_t k = 0; k < stop_ && end >= begin + content_.size() &&
                         token.compare(end - content_.size(), content_.size(), content_) == 0;
           ++k) {
        end -= content_.size();
      }
      token = token.substr(begin, end - begin);
    }
    return absl::OkStatus();
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(std::unique_ptr<UnicodeRegex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  absl::Status DecodeChain(std::vector<std::string>* tokens, size_t limit) const override {
    size_t total = 0;
    for (std::string& token : *tokens) {
      // A byte-level step before may have left partial characters: only the
      // valid stretches go to the regex.
      std::string out;
      size_t i = 0;
      while (i < token.size()) {
        size_t end = i;
        while (end < token.size()) {
          size_t length = 1;
          if (DecodeUtf8At(token, end, &length) < 0) break;
          end += length;
        }
        absl::StatusOr<std::string> replaced =
            ReplaceAll(*pattern_, absl::string_view(token).substr(i, end - i), content_, limit);
        if (!replaced.ok()) return replaced.status();
        total += replaced->size();
        if (total > limit) return TooLong(limit);
        out.append(*replaced);
        if (end < token.size()) out.push_back(token[end++]);
        i = end;
      }
      token = std::move(out);
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<UnicodeRegex> pattern_;
  std::string content_;
};

// The replacement character becomes a space, except in the first token,
// where (unless the scheme is "never") every one of them is dropped.
class MetaspaceDecoder : public Decoder {
 public:
  explicit MetaspaceDecoder(MetaspaceOptions options) : options_(std::move(options)) {}
  absl::Status DecodeChain(std::vector<std::string>* tokens, size_t /*limit*/) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      const bool drop = i == 0 && options_.prepend != MetaspaceOptions::Prepend::kNever;
      (*tokens)[i] = absl::StrReplaceAll((*tokens)[i], {{options_.replacement, drop ? "" : " "}});
    }
    return absl::OkStatus();
  }

 private:
  MetaspaceOptions options_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  absl::Status DecodeChain(std::vector<std::string>* tokens, size_t limit) const override {
    for (const auto& part : parts_) {
      if (absl::Status s = part->DecodeChain(tokens, limit); !s.ok()) return s;
      size_t total = 0;
      for (const std::string& token : *tokens) total += token.size();
      if (total > limit) return TooLong(limit);
    }
    return absl::OkStatus();
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const JsonNode& node, int depth) {
  if (node.value().is_null()) return nullptr;
  if (depth > kMaxComponentDepth) return node.Invalid(absl::StrCat("nests deeper than ", kMaxComponentDepth));
  absl::StatusOr<std::string> type = node.Type();
  if (!type.ok()) return type.status();
  if (*type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (*type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (*type == "Fuse") return std::make_unique<FuseDecoder>();
  if (*type == "Strip") {
    absl::StatusOr<std::string> content =
        node.Has("content") ? node.Field("content").AsChar() : node.Field("content").Invalid("is missing");
    if (!content.ok()) return content.status();
    // More than any token has characters: the count only bounds a loop.
    constexpr uint64_t kMaxCount = 1 << 20;
    absl::StatusOr<uint64_t> start = node.Uint("start", 0, kMaxCount);
    if (!start.ok()) return start.status();
    absl::StatusOr<uint64_t> stop = node.Uint("stop", 0, kMaxCount);
    if (!stop.ok()) return stop.status();
    return std::make_unique<StripDecoder>(*std::move(content), *start, *stop);
  }
  if (*type == "Replace") {
    if (!node.Has("pattern")) return node.Field("pattern").Invalid("is missing");
    absl::StatusOr<std::unique_ptr<UnicodeRegex>> pattern = ParsePattern(node.Field("pattern"));
    if (!pattern.ok()) return pattern.status();
    absl::StatusOr<std::string> content = node.String("content");
    if (!content.ok()) return content.status();
    return std::make_unique<ReplaceDecoder>(*std::move(pattern), *std::move(content));
  }
  if (*type == "Metaspace") {
    absl::StatusOr<MetaspaceOptions> options = ParseMetaspaceOptions(node);
    if (!options.ok()) return options.status();
    return std::make_unique<MetaspaceDecoder>(*std::move(options));
  }
  if (*type == "Sequence") {
    absl::StatusOr<std::vector<std::unique_ptr<Decoder>>> parts = ParseComponents<Decoder>(
        node, "decoders", [&](const JsonNode& part) { return ParseDecoder(part, depth + 1); });
    if (!parts.ok()) return parts.status();
    return std::make_unique<SequenceDecoder>(*std::move(parts));
  }
  return node.UnsupportedType(*type);
}

}  // namespace kiln::models
