// A plain-loop Llama forward pass (one token at a time, f32, interleaved
// RoPE), written independently of kiln's ops: the reference the lazy model is
// checked against.
#ifndef KILN_TESTS_MODELS_LLAMA_REFERENCE_H_
#define KILN_TESTS_MODELS_LLAMA_REFERENCE_H_

#include <vector>

#include "models/loaded_model.h"

namespace kiln::testing {

class ReferenceLlama {
 public:
  explicit ReferenceLlama(const models::LoadedModel& model);
  // Logits after feeding `token` at the next position.
  std::vector<float> Step(int token);

 private:
  models::LlamaConfig c_;
  std::vector<std::vector<float>> w_;  // flattened weights, see the .cc
  std::vector<std::vector<float>> k_cache_, v_cache_;
  int pos_ = 0;
};

}  // namespace kiln::testing

#endif  // KILN_TESTS_MODELS_LLAMA_REFERENCE_H_
