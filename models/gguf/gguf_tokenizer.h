// The tokenizer a GGUF file carries (tokenizer.ggml.*), rebuilt as the
// tokenizer it came from: "gpt2" vocabularies (byte-level BPE: Llama 3,
// Qwen2/3) as the equivalent tokenizer.json, "llama" vocabularies
// (SentencePiece: Llama 2, Mistral) as a SentencePiece model.
#ifndef KILN_MODELS_GGUF_GGUF_TOKENIZER_H_
#define KILN_MODELS_GGUF_GGUF_TOKENIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/gguf/gguf_model.h"
#include "models/text/tokenizer.h"

namespace kiln::models {

// Unimplemented naming the key for tokenizer models and pre-tokenizers kiln
// does not know ("tokenizer.ggml.pre \"deepseek-llm\""); InvalidArgument for
// vocabularies that cannot be built (a merge naming no token, say). `source`
// names the file.
absl::StatusOr<std::unique_ptr<Tokenizer>> MakeGgufTokenizer(const GgufTokenizerMetadata& meta,
                                                             const std::string& source);

// The ids that end generation: EOS, end-of-turn and end-of-message.
std::vector<int32_t> GgufStopIds(const GgufTokenizerMetadata& meta);

}  // namespace kiln::models

#endif  // KILN_MODELS_GGUF_GGUF_TOKENIZER_H_
