#include "models/gguf/gguf_tokenizer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "models/text/hf_tokenizer.h"
#include "models/text/sentencepiece_tokenizer.h"
#include "nlohmann/json.hpp"

namespace kiln::models {
namespace {

using nlohmann::json;

// gguf-py's TokenType values.
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4,
                           kUnused = 5, kByte = 6 };

// The split regexes of llama.cpp's pre-tokenizer names, as the upstream
// tokenizer.json files spell them.
constexpr char kGpt2Pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
constexpr char kLlama3Pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr char kQwen2Pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct PreTokenizer {
  const char* name;
  const char* pattern;
  bool ignore_merges;  // whole words found in the vocabulary are not merged
  bool nfc;            // the upstream tokenizer normalizes to NFC first
};
constexpr PreTokenizer kPreTokenizers[] = {
    {"", kGpt2Pattern, false, false},          {"default", kGpt2Pattern, false, false},
    {"gpt2", kGpt2Pattern, false, false},      {"llama-bpe", kLlama3Pattern, true, false},
    {"llama3", kLlama3Pattern, true, false},   {"smaug-bpe", kLlama3Pattern, true, false},
    {"qwen2", kQwen2Pattern, false, true},
};

absl::StatusOr<std::unique_ptr<Tokenizer>> MakeBpe(const GgufTokenizerMetadata& meta,
                                                   const std::string& source) {
  const PreTokenizer* pre = nullptr;
  for (const PreTokenizer& p : kPreTokenizers) {
    if (meta.pre == p.name) pre = &p;
  }
  if (pre == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        source, ": tokenizer.ggml.pre \"", meta.pre,
        "\" is not supported (kiln reads default, gpt2, llama-bpe, llama3, smaug-bpe, qwen2)"));
  }
  json vocab = json::object();
  json added = json::array();
  for (size_t i = 0; i < meta.tokens.size(); ++i) {
    const std::string& t = meta.tokens[i];
    const int32_t type = i < meta.token_types.size() ? meta.token_types[i] : kNormal;
    if (type == kControl || type == kUserDefined) {
      added.push_back({{"id", i}, {"content", t}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", type == kUserDefined},
                       {"special", type == kControl}});
    }
    if (!vocab.contains(t)) vocab[t] = i;
  }
  json pre_tokenizer = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", pre->pattern}}}, {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
         {"use_regex", false}}}}};
  json post = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
               {"use_regex", false}};
  if (meta.add_bos_token.value_or(false) && meta.bos_id) {
    const std::string bos = meta.tokens[*meta.bos_id];
    json special = {{"SpecialToken", {{"id", bos}, {"type_id", 0}}}};
    post = {{"type", "TemplateProcessing"},
            {"single", {special, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair",
             {special, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, special,
              {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
            {"special_tokens",
             {{bos, {{"id", bos}, {"ids", {*meta.bos_id}}, {"tokens", {bos}}}}}}};
  }
  json root = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", pre->nfc ? json{{"type", "NFC"}} : json(nullptr)},
      {"pre_tokenizer", pre_tokenizer},
      {"post_processor", post},
      {"decoder",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
        {"use_regex", false}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
        {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", pre->ignore_merges},
        {"vocab", vocab}, {"merges", meta.merges}}}};
  absl::StatusOr<std::unique_ptr<HfTokenizer>> t = HfTokenizer::FromJson(root, source);
  if (!t.ok()) return t.status();
  return std::unique_ptr<Tokenizer>(*std::move(t));
}

absl::StatusOr<std::unique_ptr<Tokenizer>> MakeSentencePiece(const GgufTokenizerMetadata& meta,
                                                             const std::string& source) {
  SpmModel m;
  m.model_type = SpmModel::ModelType::kBpe;
  m.pieces.reserve(meta.tokens.size());
  for (size_t i = 0; i < meta.tokens.size(); ++i) {
    SpmModel::Piece p;
    p.text = meta.tokens[i];
    p.score = i < meta.scores.size() ? meta.scores[i] : 0.0f;
    const int32_t type = i < meta.token_types.size() ? meta.token_types[i] : kNormal;
    p.type = type >= kNormal && type <= kByte ? static_cast<SpmModel::PieceType>(type)
                                              : SpmModel::PieceType::kNormal;
    if (p.type == SpmModel::PieceType::kByte) m.byte_fallback = true;
    m.pieces.push_back(std::move(p));
  }
  m.unk_id = static_cast<int32_t>(meta.unk_id.value_or(0));
  m.bos_id = meta.bos_id ? static_cast<int32_t>(*meta.bos_id) : -1;
  m.eos_id = meta.eos_id ? static_cast<int32_t>(*meta.eos_id) : -1;
  m.pad_id = meta.pad_id ? static_cast<int32_t>(*meta.pad_id) : -1;
  if (m.pad_id == m.unk_id || m.pad_id == m.bos_id || m.pad_id == m.eos_id) m.pad_id = -1;
  // What llama.cpp does with such a vocabulary: spaces as U+2581, a space
  // before the text unless add_space_prefix is false, no other normalizing.
  m.normalizer_name = "identity";
  m.add_dummy_prefix = meta.add_space_prefix.value_or(true);
  m.remove_extra_whitespaces = false;
  m.escape_whitespaces = true;
  absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> t =
      SentencePieceTokenizer::FromModel(m, source);
  if (!t.ok()) return t.status();
  (*t)->set_add_bos(meta.add_bos_token.value_or(true));
  return std::unique_ptr<Tokenizer>(*std::move(t));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> MakeGgufTokenizer(const GgufTokenizerMetadata& meta,
                                                             const std::string& source) {
  if (meta.tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": tokenizer.ggml.tokens is empty"));
  }
  if (meta.model == "gpt2") return MakeBpe(meta, source);
  if (meta.model == "llama") return MakeSentencePiece(meta, source);
  return absl::UnimplementedError(absl::StrCat(
      source, ": tokenizer.ggml.model \"", meta.model,
      "\" is not supported (kiln reads \"gpt2\" byte-level BPE and \"llama\" SentencePiece "
      "vocabularies)"));
}

std::vector<int32_t> GgufStopIds(const GgufTokenizerMetadata& meta) {
  std::vector<int32_t> ids;
  for (const std::optional<int64_t>& id : {meta.eos_id, meta.eot_id, meta.eom_id}) {
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) {
      ids.push_back(static_cast<int32_t>(*id));
    }
  }
  return ids;
}

}  // namespace kiln::models
