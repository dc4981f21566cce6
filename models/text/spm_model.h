// SentencePiece's model file (tokenizer.model): a protocol buffer
// (ModelProto) of pieces with scores and types, a trainer spec (the model
// type, special ids, byte fallback) and a normalizer spec. kiln reads the
// fields it needs itself (the decoder, special-token lists, `kiln info`)
// and writes one from a GGUF vocabulary; libsentencepiece does the encoding.
#ifndef KILN_MODELS_TEXT_SPM_MODEL_H_
#define KILN_MODELS_TEXT_SPM_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::models {

struct SpmModel {
  // sentencepiece_model.proto's ModelProto.SentencePiece.Type values.
  enum class PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5,
                         kByte = 6 };
  // TrainerSpec.ModelType values.
  enum class ModelType { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };
  struct Piece {
    std::string text;
    float score = 0;
    PieceType type = PieceType::kNormal;
  };
  std::vector<Piece> pieces;
  ModelType model_type = ModelType::kUnigram;
  bool byte_fallback = false;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
  // The normalizer: its rule name ("nmt_nfkc", "identity", ...), whether a
  // space is added before the text, runs of spaces squeezed, spaces written
  // as U+2581.
  std::string normalizer_name;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
  bool treat_whitespace_as_suffix = false;
};

// InvalidArgument naming `source` and the field for bytes that are not a
// well-formed ModelProto (truncated, wrong wire types, lengths past the end,
// no pieces, special ids outside the pieces).
absl::StatusOr<SpmModel> ParseSpmModel(absl::string_view bytes, absl::string_view source);

// The ModelProto bytes of `model` (with an identity normalizer when
// normalizer_name is empty), for libsentencepiece to load.
std::string SerializeSpmModel(const SpmModel& model);

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_SPM_MODEL_H_
