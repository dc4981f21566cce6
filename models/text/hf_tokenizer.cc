#include "models/text/hf_tokenizer.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/text/json_node.h"
#include "models/text/unicode_chars.h"

namespace kiln::models {

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::Load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot be opened"));
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not well-formed JSON"));
  return FromJson(root, path);
}

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::FromJson(const nlohmann::json& root,
                                                                   const std::string& source) {
  std::unique_ptr<HfTokenizer> t(new HfTokenizer());
  t->source_ = source;
  const JsonNode top(root, "", &t->source_);
  if (absl::Status s = top.ExpectObject(); !s.ok()) return s;

  const JsonNode model = top.Field("model");
  if (!top.Has("model")) return model.Invalid("is missing");
  if (absl::Status s = model.ExpectObject(); !s.ok()) return s;
  // tokenizers reads a model without "type" by its fields; BPE's are vocab
  // and merges.
  if (model.Has("type")) {
    absl::StatusOr<std::string> type = model.Type();
    if (!type.ok()) return type.status();
    if (*type != "BPE") return model.UnsupportedType(*type);
  }
  absl::StatusOr<std::unique_ptr<BpeModel>> bpe = BpeModel::Parse(model);
  if (!bpe.ok()) return bpe.status();
  t->model_ = *std::move(bpe);

  absl::StatusOr<std::unique_ptr<Normalizer>> normalizer = ParseNormalizer(top.Field("normalizer"));
  if (!normalizer.ok()) return normalizer.status();
  t->normalizer_ = *std::move(normalizer);
  absl::StatusOr<std::unique_ptr<PreTokenizer>> pre_tokenizer = ParsePreTokenizer(top.Field("pre_tokenizer"));
  if (!pre_tokenizer.ok()) return pre_tokenizer.status();
  t->pre_tokenizer_ = *std::move(pre_tokenizer);
  absl::StatusOr<std::unique_ptr<AddedVocabulary>> added =
      AddedVocabulary::Parse(top.Field("added_tokens"), *t->model_, t->normalizer_.get());
  if (!added.ok()) return added.status();
  t->added_ = *std::move(added);
  t->id_limit_ = std::max(t->model_->id_limit(), t->added_->id_limit());
  absl::StatusOr<std::unique_ptr<PostProcessor>> post =
      ParsePostProcessor(top.Field("post_processor"), t->id_limit_);
  if (!post.ok()) return post.status();
  t->post_processor_ = *std::move(post);
  absl::StatusOr<std::unique_ptr<Decoder>> decoder = ParseDecoder(top.Field("decoder"));
  if (!decoder.ok()) return decoder.status();
  t->decoder_ = *std::move(decoder);
  if (t->id_limit_ == 0) return model.Field("vocab").Invalid("is empty, and there are no added tokens");
  return t;
}

absl::StatusOr<std::vector<int32_t>> HfTokenizer::Encode(absl::string_view text,
                                                         const EncodeOptions& options) const {
  if (!IsValidUtf8(text)) {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": the text is not valid UTF-8"));
  }
  std::vector<TextPiece> pieces;
  if (!text.empty()) {  // tokenizers drops empty pieces before any step sees them
    pieces.emplace_back();
    pieces[0].text = std::string(text);
    pieces[0].at_input_start = true;
  }
  const auto failed = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(source_, ": ", s.message()));
  };
  if (absl::Status s = added_->Split(&pieces, /*normalized=*/false, options.parse_special); !s.ok()) {
    return failed(s);
  }
  if (normalizer_ != nullptr) {
    for (TextPiece& piece : pieces) {
      if (piece.token_id >= 0) continue;
      bool dropped_start = false;
      if (absl::Status s = normalizer_->Normalize(&piece.text, &dropped_start); !s.ok()) return failed(s);
      // tokenizers asks where the piece starts in the input (Metaspace's
      // "first"): deleted leading characters move it.
      if (dropped_start) piece.at_input_start = false;
    }
  }
  // A piece the normalizer emptied is gone before anything else sees it.
  std::erase_if(pieces, [](const TextPiece& piece) { return piece.token_id < 0 && piece.text.empty(); });
  if (absl::Status s = added_->Split(&pieces, /*normalized=*/true, options.parse_special); !s.ok()) {
    return failed(s);
  }
  if (pre_tokenizer_ != nullptr) {
    if (absl::Status s = pre_tokenizer_->Apply(&pieces); !s.ok()) return failed(s);
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const TextPiece& piece : pieces) {
    if (piece.token_id >= 0) {
      ids.push_back(piece.token_id);
    } else if (absl::Status s = model_->Tokenize(piece.text, &ids); !s.ok()) {
      return failed(s);
    }
  }
  if (post_processor_ != nullptr) post_processor_->Process(&ids, options.add_special_tokens);
  return ids;
}

absl::StatusOr<std::vector<std::string>> HfTokenizer::TokenStrings(absl::Span<const int32_t> ids,
                                                                   bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id < 0 || id >= id_limit_) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ": token id ", id, " is outside the vocabulary [0, ", id_limit_, ")"));
    }
    const std::string* token = nullptr;
    if (const AddedToken* added = added_->Token(id)) {
      token = &added->decoded;
    } else {
      token = model_->IdToToken(id);
    }
    if (token == nullptr) continue;  // an id no token has
    if (skip_special && added_->IsSpecialContent(*token)) continue;
    tokens.push_back(*token);
  }
  return tokens;
}

absl::StatusOr<std::string> HfTokenizer::DecodeBytes(absl::Span<const int32_t> ids,
                                                     bool skip_special_tokens) const {
  absl::StatusOr<std::vector<std::string>> tokens = TokenStrings(ids, skip_special_tokens);
  if (!tokens.ok()) return tokens.status();
  if (decoder_ == nullptr) return absl::StrJoin(*tokens, " ");
  size_t total = 0;
  for (const std::string& token : *tokens) total += token.size();
  if (absl::Status s = decoder_->DecodeChain(&*tokens, 64 * total + 4096); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(source_, ": ", s.message()));
  }
  return absl::StrJoin(*tokens, "");
}

int32_t HfTokenizer::TokenId(absl::string_view text) const {
  const int32_t added = added_->TokenToId(text);
  return added >= 0 ? added : model_->TokenToId(text);
}

std::string HfTokenizer::TokenText(int32_t id) const {
  if (const AddedToken* added = added_->Token(id)) return added->content;
  const std::string* token = model_->IdToToken(id);
  return token == nullptr ? std::string() : *token;
}

bool HfTokenizer::IsSpecial(int32_t id) const {
  if (const AddedToken* added = added_->Token(id)) return added_->IsSpecialContent(added->decoded);
  const std::string* token = model_->IdToToken(id);
  return token != nullptr && added_->IsSpecialContent(*token);
}

std::string HfTokenizer::Describe() const {
  return absl::StrCat("Hugging Face tokenizer.json (BPE), ", id_limit_, " ids (", model_->size(),
                      " in the model, ", added_->size(), " added): ", source_);
}

}  // namespace kiln::models
