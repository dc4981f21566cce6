#include "models/text/llama2c_tokenizer.h"

#include <cstring>
#include <limits>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "models/mapped_file.h"

namespace kiln::models {
namespace {

// Byte-fallback tokens follow <unk>, BOS and EOS in SentencePiece vocabularies.
constexpr int32_t kFirstByteToken = 3;
// llama2.c starts its best-merge search at this score, so pairs scoring at or
// below it never merge; kept so that encodings match run.c's exactly.
constexpr float kNoMergeScore = -1e10f;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The raw byte of a "<0xNN>" piece, or -1. Stricter than llama2.c's sscanf (which
// also takes "<0x4" or "<0x41junk"): byte pieces are written exactly this way.
int BytePieceValue(absl::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  const int hi = HexDigit(piece[3]), lo = HexDigit(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

bool IsContinuationByte(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

int32_t ReadI32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

float ReadF32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// One token of the sequence being merged; merged-away symbols leave the list.
struct Symbol {
  int32_t id;
  int prev;
  int next;
};

// A mergeable adjacent pair, identified by its left symbol's position. Entries
// go stale when a neighbour merges; they are checked when popped.
struct Candidate {
  float score;
  int left;
  int right;
  int32_t left_id;
  int32_t right_id;
  int32_t merged_id;
};

// Highest score first; on equal scores the leftmost pair, as llama2.c's scan
// keeps the first maximum. Symbols keep their original positions, so a smaller
// position is further left.
struct MergesFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  }
};

}  // namespace

Llama2cTokenizer::Llama2cTokenizer(std::vector<std::string> pieces, std::vector<float> scores)
    : pieces_(std::move(pieces)), scores_(std::move(scores)) {
  decoded_.reserve(pieces_.size());
  ids_.reserve(pieces_.size());
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const int byte = BytePieceValue(pieces_[i]);
    decoded_.push_back(byte < 0 ? pieces_[i] : std::string(1, static_cast<char>(byte)));
    // A duplicated piece maps to its first id, deterministically.
    ids_.try_emplace(pieces_[i], static_cast<int32_t>(i));
  }
}

absl::StatusOr<Llama2cTokenizer> Llama2cTokenizer::FromPieces(std::vector<std::string> pieces,
                                                std::vector<float> scores) {
  if (pieces.empty()) return absl::InvalidArgumentError("tokenizer: empty vocabulary");
  if (pieces.size() != scores.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer: ", pieces.size(), " pieces but ", scores.size(), " scores"));
  }
  if (pieces.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer: ", pieces.size(), " pieces do not fit int32 ids"));
  }
  return Llama2cTokenizer(std::move(pieces), std::move(scores));
}

absl::StatusOr<Llama2cTokenizer> Llama2cTokenizer::Load(const std::string& path, int vocab_size) {
  if (vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": vocab_size must be positive, got ", vocab_size));
  }
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  const uint8_t* data = (*file)->data();
  const size_t size = (*file)->size();
  if (size == 0) return absl::InvalidArgumentError(absl::StrCat(path, ": empty tokenizer file"));
  if (size < sizeof(int32_t)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": truncated tokenizer file: ", size,
                                                   " bytes, max_token_length alone needs 4"));
  }
  const int32_t max_token_length = ReadI32(data);
  if (max_token_length < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": negative max_token_length ", max_token_length));
  }

  // Each token takes at least 8 bytes, so a huge vocab_size cannot make us
  // reserve more than the file could hold.
  const size_t capacity = std::min<size_t>(vocab_size, size / 8);
  std::vector<std::string> pieces;
  std::vector<float> scores;
  pieces.reserve(capacity);
  scores.reserve(capacity);
  size_t offset = sizeof(int32_t);
  for (int i = 0; i < vocab_size; ++i) {
    if (size - offset < 8) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": truncated tokenizer file: token ", i, " of ", vocab_size,
          " needs a score and a length at byte ", offset, ", but the file has ", size, " bytes"));
    }
    const float score = ReadF32(data + offset);
    const int32_t length = ReadI32(data + offset + 4);
    offset += 8;
    if (length < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": token ", i, " has negative length ", length));
    }
    if (static_cast<uint64_t>(length) > size - offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": token ", i, " has length ", length, " but only ", size - offset,
          " bytes remain in the file (truncated, or vocab_size ", vocab_size, " too large)"));
    }
    pieces.emplace_back(reinterpret_cast<const char*>(data + offset), length);
    scores.push_back(score);
    offset += length;
  }
  if (offset != size) {
    // llama2.c ignores the rest; here it is the tell-tale of a tokenizer for a
    // larger vocabulary than the model's.
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", size - offset, " bytes follow the ", vocab_size,
                     " tokens: the file holds more tokens than the model's vocabulary"));
  }
  return Llama2cTokenizer(std::move(pieces), std::move(scores));
}

int32_t Llama2cTokenizer::Lookup(absl::string_view piece) const {
  auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}

absl::StatusOr<std::vector<int32_t>> Llama2cTokenizer::Encode(absl::string_view text, bool bos,
                                                       bool eos) const {
  auto out_of_vocab = [&](absl::string_view what, int64_t id) {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer: ", what, " id ", id,
                                                   " is outside the vocabulary of ", vocab_size(),
                                                   " tokens"));
  };
  std::vector<Symbol> symbols;
  symbols.reserve(text.size() + 1);
  auto append_piece = [&](absl::string_view piece) -> absl::Status {
    int32_t id = Lookup(piece);
    if (id >= 0) {
      symbols.push_back({id, 0, 0});
      return absl::OkStatus();
    }
    for (char c : piece) {
      id = kFirstByteToken + static_cast<uint8_t>(c);
      if (id >= vocab_size()) return out_of_vocab("byte-fallback token", id);
      symbols.push_back({id, 0, 0});
    }
    return absl::OkStatus();
  };

  // SentencePiece's add_dummy_prefix: " Once" is the word as it appears mid-text.
  // (llama2.c emits id -1 when " " is missing; byte fallback is the sane reading.)
  if (!text.empty()) {
    if (absl::Status s = append_piece(" "); !s.ok()) return s;
  }
  // One code point at a time: a lead byte plus at most three continuation bytes,
  // as llama2.c groups them (invalid UTF-8 still ends up as byte tokens).
  for (size_t i = 0; i < text.size();) {
    size_t end = i + 1;
    while (end < text.size() && end - i < 4 && IsContinuationByte(text[end])) ++end;
    if (absl::Status s = append_piece(text.substr(i, end - i)); !s.ok()) return s;
    i = end;
  }

  // Priority-queue BPE: O(n log n) where llama2.c rescans all pairs per merge.
  const int n = static_cast<int>(symbols.size());
  for (int i = 0; i < n; ++i) {
    symbols[i].prev = i - 1;
    symbols[i].next = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, MergesFirst> queue;
  std::string pair;
  auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t a = symbols[left].id, b = symbols[right].id;
    pair.assign(pieces_[a]);
    pair.append(pieces_[b]);
    const int32_t merged = Lookup(pair);
    // `>` also keeps NaN scores from ever merging, as in llama2.c.
    if (merged >= 0 && scores_[merged] > kNoMergeScore) {
      queue.push({scores_[merged], left, right, a, b, merged});
    }
  };
  for (int i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    // Stale when either side has merged since; a merged-away right symbol is
    // no longer anyone's `next`.
    if (left.next != c.right || left.id != c.left_id || symbols[c.right].id != c.right_id) {
      continue;
    }
    left.id = c.merged_id;
    left.next = symbols[c.right].next;
    if (left.next >= 0) symbols[left.next].prev = c.left;
    symbols[c.right].prev = symbols[c.right].next = -1;
    symbols[c.right].id = -1;
    consider(left.prev, c.left);
    consider(c.left, left.next);
  }

  std::vector<int32_t> tokens;
  tokens.reserve(symbols.size() + 2);
  if (bos) {
    if (kBos >= vocab_size()) return out_of_vocab("BOS", kBos);
    tokens.push_back(kBos);
  }
  for (int i = n > 0 ? 0 : -1; i >= 0; i = symbols[i].next) tokens.push_back(symbols[i].id);
  if (eos) {
    if (kEos >= vocab_size()) return out_of_vocab("EOS", kEos);
    tokens.push_back(kEos);
  }
  return tokens;
}

absl::StatusOr<std::string> Llama2cTokenizer::Decode(int32_t prev_token, int32_t token) const {
  if (token < 0 || token >= vocab_size()) {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer: cannot decode token id ", token,
                                                   ": the vocabulary has ", vocab_size(),
                                                   " tokens"));
  }
  // The check looks at the stored piece, as llama2.c does: a "<0x20>" byte
  // token after BOS still yields its space.
  if (prev_token == kBos && !pieces_[token].empty() && pieces_[token][0] == ' ') {
    return decoded_[token].substr(1);
  }
  return decoded_[token];
}

absl::StatusOr<std::vector<int32_t>> Llama2cTokenizer::Encode(absl::string_view text,
                                                              const EncodeOptions& options) const {
  return Encode(text, options.add_special_tokens, /*eos=*/false);
}

absl::StatusOr<std::string> Llama2cTokenizer::DecodeBytes(absl::Span<const int32_t> ids,
                                                          bool skip_special_tokens) const {
  std::string out;
  int32_t prev = -1;
  for (const int32_t id : ids) {
    if (skip_special_tokens && IsSpecial(id)) {
      prev = id;
      continue;
    }
    absl::StatusOr<std::string> piece = Decode(prev, id);
    if (!piece.ok()) return piece.status();
    out += *piece;
    prev = id;
  }
  return out;
}

std::string Llama2cTokenizer::Describe() const {
  return absl::StrCat("llama2.c tokenizer.bin, ", vocab_size(), " tokens");
}

}  // namespace kiln::models
