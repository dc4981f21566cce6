// Turns tokens into text as they are generated. A token may end inside a
// UTF-8 character (byte-level BPE, SentencePiece byte fallback); its bytes
// are held back until the character is whole, so every piece handed out is
// valid UTF-8. Decoder rules that look at neighbours (SentencePiece drops
// the space of a text's first piece) are kept by decoding the tokens since
// the last piece together.
#ifndef KILN_MODELS_TEXT_STREAM_DECODER_H_
#define KILN_MODELS_TEXT_STREAM_DECODER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/text/tokenizer.h"

namespace kiln::models {

class StreamDecoder {
 public:
  // `tokenizer` must outlive the decoder.
  StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

  // The text that `id` completes (often empty, or more than one character).
  // InvalidArgument for an id outside the vocabulary.
  absl::StatusOr<std::string> Push(int32_t id);

  // What is still held back (an unfinished character, as U+FFFD), after
  // which the decoder starts afresh.
  std::string Finish();

  // Starts afresh, dropping what is held back. `primed` tokens are decoded
  // as context only (a chat turn's earlier tokens), so the next piece joins
  // them as it would in one long decode.
  void Reset(std::vector<int32_t> primed = {});

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  // Tokens decoded together: those that gave `emitted_` bytes, then the new
  // ones. Trimmed to the tokens after the last whole piece.
  std::vector<int32_t> window_;
  size_t emitted_ = 0;  // bytes of DecodeBytes(window_) already handed out
};

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_STREAM_DECODER_H_
