// SentencePiece model files (tokenizer.model) on arbitrary bytes: kiln's
// protobuf reader, then libsentencepiece's loader; where both accept the
// bytes, encode and decode a few texts.
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/text/sentencepiece_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::unique_ptr<kiln::models::SentencePieceTokenizer>> t =
      kiln::models::SentencePieceTokenizer::FromBytes(bytes, "fuzz.model");
  if (!t.ok()) return 0;
  for (const char* text : {"Hello world", "<s>[INST] x [/INST]</s>", "日本 👍🏽", ""}) {
    absl::StatusOr<std::vector<int32_t>> ids = (*t)->Encode(text, {});
    if (ids.ok()) (void)(*t)->Decode(*ids);
  }
  std::vector<int32_t> all;
  for (int32_t id = 0; id < (*t)->vocab_size() && id < 4096; ++id) all.push_back(id);
  (void)(*t)->Decode(all);
  return 0;
}
