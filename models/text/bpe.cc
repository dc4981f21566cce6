#include "models/text/bpe.h"

#include <climits>
#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "models/text/unicode_chars.h"

namespace kiln::models {
namespace {

// Ids may leave holes (tokenizers allows it), but not so many that the id
// table dwarfs the vocabulary.
size_t MaxIdLimit(size_t entries) { return 16 * entries + 65536; }

// tokenizers caches at most this many words, and only short ones.
constexpr size_t kCacheCapacity = 10000;
constexpr size_t kMaxCachedWordBytes = 256;

absl::StatusOr<std::string> OptionalString(const JsonNode& model, const char* key) {
  if (!model.Has(key)) return std::string();
  return model.Field(key).AsString();
}

}  // namespace

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::Parse(const JsonNode& model) {
  std::unique_ptr<BpeModel> bpe(new BpeModel());
  if (model.Has("dropout")) {
    const JsonNode dropout = model.Field("dropout");
    if (!dropout.value().is_number()) return dropout.Invalid("is not a number");
    const double p = dropout.value().get<double>();
    if (!(p >= 0.0 && p <= 1.0)) return dropout.Invalid(absl::StrCat("is ", p, ", outside [0, 1]"));
    if (p > 0.0) {
      return dropout.Unsupported(absl::StrCat("is ", p, ": BPE dropout (random merges) is not supported"));
    }
  }
  for (const auto& [key, flag] :
       {std::pair{"fuse_unk", &bpe->fuse_unk_}, std::pair{"byte_fallback", &bpe->byte_fallback_},
        std::pair{"ignore_merges", &bpe->ignore_merges_}}) {
    absl::StatusOr<bool> value = model.Bool(key, false);
    if (!value.ok()) return value.status();
    *flag = *value;
  }
  absl::StatusOr<std::string> prefix = OptionalString(model, "continuing_subword_prefix");
  if (!prefix.ok()) return prefix.status();
  bpe->continuing_subword_prefix_ = *std::move(prefix);
  absl::StatusOr<std::string> suffix = OptionalString(model, "end_of_word_suffix");
  if (!suffix.ok()) return suffix.status();
  bpe->end_of_word_suffix_ = *std::move(suffix);

  if (!model.Has("vocab")) return model.Field("vocab").Invalid("is missing");
  if (absl::Status s = bpe->ReadVocab(model.Field("vocab")); !s.ok()) return s;
  if (model.Has("unk_token")) {
    absl::StatusOr<std::string> unk = model.Field("unk_token").AsString();
    if (!unk.ok()) return unk.status();
    const int32_t id = bpe->TokenToId(*unk);
    if (id < 0) {
      return model.Field("unk_token").Invalid(absl::StrCat("\"", *unk, "\" is not in the vocabulary"));
    }
    bpe->unk_id_ = id;
  }
  for (int b = 0; b < 256; ++b) bpe->byte_token_[b] = bpe->TokenToId(absl::StrFormat("<0x%02X>", b));
  if (!model.Has("merges")) return model.Field("merges").Invalid("is missing");
  if (absl::Status s = bpe->ReadMerges(model.Field("merges")); !s.ok()) return s;
  return bpe;
}

absl::Status BpeModel::ReadVocab(const JsonNode& vocab) {
  if (absl::Status s = vocab.ExpectObject(); !s.ok()) return s;
  const size_t entries = vocab.value().size();
  const size_t id_limit = std::min<size_t>(MaxIdLimit(entries), INT32_MAX);
  vocab_.reserve(entries);
  tokens_.reserve(entries);
  std::vector<std::pair<int32_t, int32_t>> id_slots;  // (id, index into tokens_)
  id_slots.reserve(entries);
  int32_t max_id = -1;
  for (const auto& [token, value] : vocab.value().items()) {
    // The path is only made for an error: it costs more than the check.
    uint64_t number = 0;
    if (!JsonNode::IsUint(value, id_limit - 1, &number)) {
      return vocab.Member(token, value)
          .Invalid(absl::StrCat("is ", value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                ", not an id in [0, ", id_limit - 1, "] (the ids of ", entries, " tokens)"));
    }
    const int32_t id = static_cast<int32_t>(number);
    id_slots.emplace_back(id, static_cast<int32_t>(tokens_.size()));
    vocab_.emplace(token, id);
    tokens_.push_back(token);
    max_id = std::max(max_id, id);
  }
  slot_of_id_.assign(static_cast<size_t>(max_id + 1), -1);
  for (const auto& [id, slot] : id_slots) {
    if (slot_of_id_[id] >= 0) {
      return vocab.Invalid(absl::StrCat(
          "gives id ", id, " to two tokens, ",
          nlohmann::json(tokens_[slot_of_id_[id]])
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          " and ",
          nlohmann::json(tokens_[slot]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    }
    slot_of_id_[id] = slot;
  }
  return absl::OkStatus();
}

absl::Status BpeModel::ReadMerges(const JsonNode& merges) {
  if (absl::Status s = merges.ExpectArray(); !s.ok()) return s;
  const size_t count = merges.value().size();
  if (count > UINT32_MAX) return merges.Invalid("holds more merges than ranks can number");
  merges_.reserve(count);
  const size_t prefix_length = continuing_subword_prefix_.size();
  std::string merged;
  // tokenizers reads the list as all "a b" strings (the older form) or all
  // [a, b] pairs, never a mix.
  const bool legacy = count > 0 && merges.value()[0].is_string();
  for (size_t rank = 0; rank < count; ++rank) {
    const nlohmann::json& value = merges.value()[rank];
    // The path is only made for an error: it costs more than the merge.
    const auto entry = [&]() { return merges.Element(rank); };
    absl::string_view a, b;
    if (value.is_string() && legacy) {
      const std::string& line = value.get_ref<const std::string&>();
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        return entry().Invalid("is not two tokens joined by one space");
      }
      a = absl::string_view(line).substr(0, space);
      b = absl::string_view(line).substr(space + 1);
    } else if (!legacy && value.is_array() && value.size() == 2 && value[0].is_string() &&
               value[1].is_string()) {
      a = value[0].get_ref<const std::string&>();
      b = value[1].get_ref<const std::string&>();
    } else {
      return entry().Invalid(legacy ? "is not an \"a b\" string like the first merge"
                                    : "is not an [\"a\", \"b\"] pair like the first merge");
    }
    const int32_t a_id = TokenToId(a), b_id = TokenToId(b);
    if (a_id < 0 || b_id < 0) {
      return entry().Invalid(absl::StrCat("names ",
                                          nlohmann::json(std::string(a_id < 0 ? a : b))
                                              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                          ", which is not in the vocabulary"));
    }
    if (b.size() < prefix_length || b.substr(0, prefix_length) != continuing_subword_prefix_) {
      return entry().Invalid(
          absl::StrCat("has a second token that does not start with the continuing_subword_prefix"));
    }
    merged.assign(a.data(), a.size());
    absl::StrAppend(&merged, b.substr(prefix_length));
    const int32_t merged_id = TokenToId(merged);
    if (merged_id < 0) {
      return entry().Invalid(absl::StrCat(
          "makes ", nlohmann::json(merged).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          ", which is not in the vocabulary"));
    }
    // A repeated pair takes its last rank, as tokenizers' HashMap collect does.
    merges_[PairKey(a_id, b_id)] = Merge{static_cast<uint32_t>(rank), merged_id};
  }
  return absl::OkStatus();
}

int32_t BpeModel::TokenToId(absl::string_view token) const {
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= slot_of_id_.size() || slot_of_id_[id] < 0) return nullptr;
  return &tokens_[slot_of_id_[id]];
}

absl::Status BpeModel::Tokenize(absl::string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return absl::OkStatus();
  if (ignore_merges_) {
    if (const int32_t id = TokenToId(word); id >= 0) {
      ids->push_back(id);
      return absl::OkStatus();
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::shared_lock lock(cache_mutex_);
    if (const auto it = cache_.find(word); it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return absl::OkStatus();
    }
  }
  std::vector<int32_t> word_ids;
  MergeWord(word, &word_ids);
  ids->insert(ids->end(), word_ids.begin(), word_ids.end());
  if (cacheable) {
    std::unique_lock lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(word, std::move(word_ids));
  }
  return absl::OkStatus();
}

void BpeModel::InitialSymbols(absl::string_view word, std::vector<int32_t>* symbols) const {
  int32_t pending_unk = -1;  // an unknown run not yet added (fuse_unk grows it)
  std::string piece;
  size_t i = 0;
  while (i < word.size()) {
    size_t length = 1;
    DecodeUtf8At(word, i, &length);
    const bool first = i == 0, last = i + length >= word.size();
    piece.clear();
    if (!first) piece.append(continuing_subword_prefix_);
    absl::StrAppend(&piece, word.substr(i, length));
    if (last) piece.append(end_of_word_suffix_);
    i += length;
    if (const int32_t id = TokenToId(piece); id >= 0) {
      if (pending_unk >= 0) symbols->push_back(pending_unk);
      pending_unk = -1;
      symbols->push_back(id);
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (const char c : piece) all_bytes = all_bytes && byte_token_[static_cast<uint8_t>(c)] >= 0;
      if (all_bytes) {
        // tokenizers leaves a pending unk pending here, so it lands after.
        for (const char c : piece) symbols->push_back(byte_token_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (!unk_id_) continue;  // no unk_token: the character is dropped
    if (pending_unk >= 0 && !fuse_unk_) symbols->push_back(pending_unk);
    pending_unk = *unk_id_;
  }
  if (pending_unk >= 0) symbols->push_back(pending_unk);
}

void BpeModel::MergeWord(absl::string_view word, std::vector<int32_t>* ids) const {
  std::vector<int32_t> symbols;
  InitialSymbols(word, &symbols);
  const int n = static_cast<int>(symbols.size());
  if (n < 2 || merges_.empty()) {
    *ids = std::move(symbols);
    return;
  }
  std::vector<int> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int k = 0; k < n; ++k) {
    prev[k] = k - 1;
    next[k] = k + 1 < n ? k + 1 : -1;
  }
  struct Candidate {
    uint32_t rank;
    int pos;
    int32_t merged;
  };
  const auto later = [](const Candidate& x, const Candidate& y) {
    return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> queue(later);
  const auto offer = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    const auto it = merges_.find(PairKey(symbols[pos], symbols[next[pos]]));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.merged});
  };
  for (int k = 0; k + 1 < n; ++k) offer(k);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    if (!alive[top.pos] || next[top.pos] < 0) continue;
    const int right = next[top.pos];
    // An entry is stale when its pair has changed since it was queued.
    const auto it = merges_.find(PairKey(symbols[top.pos], symbols[right]));
    if (it == merges_.end() || it->second.merged != top.merged) continue;
    symbols[top.pos] = top.merged;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = top.pos;
    offer(prev[top.pos]);
    offer(top.pos);
  }
  ids->clear();
  for (int k = 0; k < n; ++k) {
    if (alive[k]) ids->push_back(symbols[k]);
  }
}

}  // namespace kiln::models
