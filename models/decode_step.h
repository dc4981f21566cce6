// A decode step recorded once and run for every token on a GPU. Each step of
// a decode has the same trace with a new position, so the step of one token
// at a symbolic position is recorded and planned once; a token then writes
// its id into the step's input buffer, binds the position and runs the
// plan (replayed from a CUDA graph where the executor has graphs on),
// without recording, collecting or hashing a trace. Its greedy token is
// picked on the GPU and only that id is read back.
#ifndef KILN_MODELS_DECODE_STEP_H_
#define KILN_MODELS_DECODE_STEP_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "models/llama.h"
#include "optimizer/cuda_executor.h"
#include "tensor/trace.h"

namespace kiln::models {

class DecodeStep {
 public:
  // The step of `model` (on a GPU) over `cache` (realized there), greedy
  // over the first `vocab` logits. Each Run updates `cache`'s buffers in
  // place: while the step is in use nothing else may write them, and the
  // step must go before `cache` is fed any other way (Session does both).
  static absl::StatusOr<std::unique_ptr<DecodeStep>> Create(const LlamaModel& model, KvCache& cache,
                                                            int64_t vocab);

  // Runs `token` at position `pos` and returns the greedy next token.
  // InvalidArgument for a token or position out of range.
  absl::StatusOr<int32_t> Greedy(int32_t token, int64_t pos);

 private:
  DecodeStep() = default;

  std::shared_ptr<CudaExecutor> gpu_;
  int64_t vocab_ = 0, model_vocab_ = 0, context_ = 0;
  Tensor token_;                 // i32 [1] on the GPU: the step's input id
  std::optional<Symbol> position_;
  std::vector<Tensor> outputs_;  // the greedy token, then the cache's updates
  Trace trace_;
  std::shared_ptr<const CudaExecutor::Plan> plan_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_DECODE_STEP_H_
