// tokenizer.json's "post_processor": what EncodeOptions::add_special_tokens
// adds around a single text (a template's BOS, BERT's [CLS] ... [SEP]).
#ifndef KILN_MODELS_TEXT_POST_PROCESSORS_H_
#define KILN_MODELS_TEXT_POST_PROCESSORS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "models/text/json_node.h"

namespace kiln::models {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites the ids of one encoded text; a no-op without add_special_tokens.
  virtual void Process(std::vector<int32_t>* ids, bool add_special_tokens) const = 0;
};

// nullptr for a null post_processor. Ids the template adds must be below
// `id_limit` (InvalidArgument otherwise); Unimplemented naming the path and
// type for a type kiln lacks.
absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(const JsonNode& node, int32_t id_limit,
                                                                  int depth = 0);

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_POST_PROCESSORS_H_
