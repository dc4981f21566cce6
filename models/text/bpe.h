// tokenizer.json's BPE model: a vocabulary, ranked merges, and the merge loop
// of tokenizers' Word::merge_all (lowest rank first, then leftmost).
#ifndef KILN_MODELS_TEXT_BPE_H_
#define KILN_MODELS_TEXT_BPE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/text/json_node.h"

namespace kiln::models {

class BpeModel {
 public:
  // Reads the "model" object (type BPE). InvalidArgument naming the path for
  // wrong types, ids out of range or repeated, merges naming unknown tokens,
  // an unk_token outside the vocabulary (tokenizers fails only when it needs
  // it); Unimplemented for a dropout above 0.
  static absl::StatusOr<std::unique_ptr<BpeModel>> Parse(const JsonNode& model);

  // Appends the ids of one pre-tokenized word. Characters with no token,
  // no byte fallback and no unk_token are dropped, as tokenizers drops them.
  absl::Status Tokenize(absl::string_view word, std::vector<int32_t>* ids) const;

  // The id of `token` in the vocabulary, or -1.
  int32_t TokenToId(absl::string_view token) const;
  // The token of `id`, or nullptr for an id no token has.
  const std::string* IdToToken(int32_t id) const;
  // Number of entries (tokenizers' get_vocab_size), not the largest id + 1.
  size_t size() const { return vocab_.size(); }
  // Largest id + 1.
  int32_t id_limit() const { return static_cast<int32_t>(slot_of_id_.size()); }

 private:
  BpeModel() = default;
  struct Merge {
    uint32_t rank;
    int32_t merged;
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  absl::Status ReadVocab(const JsonNode& vocab);
  absl::Status ReadMerges(const JsonNode& merges);
  void MergeWord(absl::string_view word, std::vector<int32_t>* ids) const;
  void InitialSymbols(absl::string_view word, std::vector<int32_t>* symbols) const;

  absl::flat_hash_map<std::string, int32_t> vocab_;
  std::vector<std::string> tokens_;  // in the order read
  std::vector<int32_t> slot_of_id_;  // id -> index into tokens_, -1 for none
  absl::flat_hash_map<uint64_t, Merge> merges_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  std::array<int32_t, 256> byte_token_{};  // "<0xAB>" ids for byte_fallback, -1 where missing

  // Words seen before, as tokenizers caches them: most text repeats words.
  mutable std::shared_mutex cache_mutex_;
  mutable absl::flat_hash_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_BPE_H_
