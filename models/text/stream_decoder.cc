#include "models/text/stream_decoder.h"

#include <utility>

#include "models/text/utf8.h"

namespace kiln::models {
namespace {

// Tokens kept before the pending ones, so that a decoder's rules for a
// token's neighbours (a leading space after a piece) see some context. One
// is enough for the rules kiln implements; more only costs time.
constexpr size_t kContextTokens = 1;

}  // namespace

absl::StatusOr<std::string> StreamDecoder::Push(int32_t id) {
  window_.push_back(id);
  absl::StatusOr<std::string> bytes = tokenizer_.DecodeBytes(window_, skip_special_);
  if (!bytes.ok()) {
    window_.pop_back();
    return bytes.status();
  }
  // A decoder rule may rewrite what was handed out already (it cannot for
  // the tokenizers kiln reads, but a piece must never be repeated): then
  // hand out only what follows.
  if (bytes->size() < emitted_) {
    emitted_ = bytes->size();
    return std::string();
  }
  const size_t complete = CompleteUtf8Prefix(*bytes);
  if (complete <= emitted_) return std::string();
  std::string piece = ToValidUtf8(absl::string_view(*bytes).substr(emitted_, complete - emitted_));
  emitted_ = complete;
  if (complete == bytes->size() && window_.size() > kContextTokens) {
    // Everything is out: keep the last tokens as context, re-measured.
    std::vector<int32_t> context(window_.end() - kContextTokens, window_.end());
    Reset(std::move(context));
  }
  return piece;
}

std::string StreamDecoder::Finish() {
  absl::StatusOr<std::string> bytes = tokenizer_.DecodeBytes(window_, skip_special_);
  std::string rest;
  if (bytes.ok() && bytes->size() > emitted_) {
    rest = ToValidUtf8(absl::string_view(*bytes).substr(emitted_));
  }
  Reset();
  return rest;
}

void StreamDecoder::Reset(std::vector<int32_t> primed) {
  window_ = std::move(primed);
  emitted_ = 0;
  if (!window_.empty()) {
    absl::StatusOr<std::string> bytes = tokenizer_.DecodeBytes(window_, skip_special_);
    emitted_ = bytes.ok() ? bytes->size() : 0;
  }
}

}  // namespace kiln::models
