#include "models/text/sentencepiece_tokenizer.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "models/mapped_file.h"

namespace kiln::models {
namespace {

constexpr absl::string_view kSpaceSymbol = "\xE2\x96\x81";       // U+2581
constexpr absl::string_view kUnknownSurface = " \xE2\x81\x87 ";  // " U+2047 "

// The byte of a "<0xNN>" piece, or -1.
int ByteOfPiece(absl::string_view piece) {
  if (piece.size() != 6 || !absl::StartsWith(piece, "<0x") || piece[5] != '>') return -1;
  int v = 0;
  for (char c : piece.substr(3, 2)) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(SpmModel model,
                                               std::unique_ptr<spm::Processor> processor,
                                               std::string source)
    : model_(std::move(model)), processor_(std::move(processor)), source_(std::move(source)) {
  byte_of_.assign(model_.pieces.size(), -1);
  for (size_t i = 0; i < model_.pieces.size(); ++i) {
    const SpmModel::Piece& p = model_.pieces[i];
    ids_.try_emplace(p.text, static_cast<int32_t>(i));
    if (p.type == SpmModel::PieceType::kByte) byte_of_[i] = ByteOfPiece(p.text);
    if (p.type == SpmModel::PieceType::kControl && !p.text.empty()) {
      controls_.emplace_back(p.text, static_cast<int32_t>(i));
    }
  }
  std::stable_sort(controls_.begin(), controls_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::Load(
    const std::string& path) {
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  return FromBytes((*file)->bytes(), path);
}

absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::FromBytes(
    absl::string_view bytes, const std::string& source) {
  absl::StatusOr<SpmModel> model = ParseSpmModel(bytes, source);
  if (!model.ok()) return model.status();
  auto processor = std::make_unique<spm::Processor>();
  if (std::string error = processor->LoadSerializedProto(std::string_view(bytes.data(), bytes.size())); !error.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": sentencepiece cannot load the model: ", error));
  }
  if (processor->size() != static_cast<int>(model->pieces.size())) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": sentencepiece reads ",
                                                   processor->size(), " pieces, kiln ",
                                                   model->pieces.size()));
  }
  return std::unique_ptr<SentencePieceTokenizer>(
      new SentencePieceTokenizer(*std::move(model), std::move(processor), source));
}

absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::FromModel(
    const SpmModel& model, const std::string& source) {
  return FromBytes(SerializeSpmModel(model), source);
}

absl::Status SentencePieceTokenizer::EncodePlain(absl::string_view text,
                                                 std::vector<int32_t>* ids) const {
  std::vector<int> out;
  if (std::string error = processor_->Encode(std::string_view(text.data(), text.size()), &out); !error.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": sentencepiece: ", error));
  }
  ids->insert(ids->end(), out.begin(), out.end());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> SentencePieceTokenizer::Encode(
    absl::string_view text, const EncodeOptions& options) const {
  std::vector<int32_t> ids;
  if (options.add_special_tokens && add_bos_ && model_.bos_id >= 0) ids.push_back(model_.bos_id);
  if (!options.parse_special || controls_.empty()) {
    if (absl::Status s = EncodePlain(text, &ids); !s.ok()) return s;
    return ids;
  }
  size_t plain_start = 0;
  for (size_t i = 0; i < text.size();) {
    const std::pair<std::string, int32_t>* match = nullptr;
    for (const auto& control : controls_) {
      if (absl::StartsWith(text.substr(i), control.first)) {
        match = &control;
        break;
      }
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    if (i > plain_start) {
      if (absl::Status s = EncodePlain(text.substr(plain_start, i - plain_start), &ids); !s.ok()) {
        return s;
      }
    }
    ids.push_back(match->second);
    i += match->first.size();
    plain_start = i;
  }
  if (plain_start < text.size()) {
    if (absl::Status s = EncodePlain(text.substr(plain_start), &ids); !s.ok()) return s;
  }
  return ids;
}

absl::StatusOr<std::string> SentencePieceTokenizer::DecodeBytes(absl::Span<const int32_t> ids,
                                                                bool skip_special_tokens) const {
  std::string out;
  bool at_start = true;  // no text piece yet: a leading space is the dummy prefix
  const bool strip_first = model_.add_dummy_prefix || model_.remove_extra_whitespaces;
  for (const int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ": cannot decode token id ", id,
                                                     ": the vocabulary has ", vocab_size(),
                                                     " pieces"));
    }
    const SpmModel::Piece& p = model_.pieces[id];
    if (p.type == SpmModel::PieceType::kControl) continue;
    if (p.type == SpmModel::PieceType::kUnknown) {
      if (!skip_special_tokens) out.append(kUnknownSurface.data(), kUnknownSurface.size());
      at_start = false;
      continue;
    }
    if (byte_of_[id] >= 0) {
      out.push_back(static_cast<char>(byte_of_[id]));
      at_start = false;
      continue;
    }
    absl::string_view piece = p.text;
    if (at_start && strip_first && !model_.treat_whitespace_as_suffix) {
      absl::ConsumePrefix(&piece, kSpaceSymbol);
    }
    out += absl::StrReplaceAll(piece, {{kSpaceSymbol, " "}});
    at_start = false;
  }
  return out;
}

int32_t SentencePieceTokenizer::TokenId(absl::string_view text) const {
  const auto it = ids_.find(text);
  return it == ids_.end() ? -1 : it->second;
}

std::string SentencePieceTokenizer::TokenText(int32_t id) const {
  return id >= 0 && id < vocab_size() ? model_.pieces[id].text : std::string();
}

bool SentencePieceTokenizer::IsSpecial(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  const SpmModel::PieceType t = model_.pieces[id].type;
  return t == SpmModel::PieceType::kControl || t == SpmModel::PieceType::kUnknown;
}

std::string SentencePieceTokenizer::Describe() const {
  const char* type = model_.model_type == SpmModel::ModelType::kBpe       ? "BPE"
                     : model_.model_type == SpmModel::ModelType::kUnigram ? "unigram"
                                                                          : "word/char";
  return absl::StrCat("SentencePiece ", type, " (", source_, "), ", vocab_size(), " pieces",
                      model_.byte_fallback ? ", byte fallback" : "");
}

}  // namespace kiln::models
