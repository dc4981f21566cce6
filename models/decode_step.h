// A decode step recorded once and run for every token on a GPU. Each step of
// a decode has the same trace with a new position, so the step of one token
// at a symbolic position is recorded and planned once; a token then writes
// its id into the step's input buffer, binds the position and runs the
// plan (replayed from a CUDA graph where the executor has graphs on),
// without recording, collecting or hashing a trace. A greedy step picks its
// token on the GPU and reads back only that id; a logits step reads back the
// logits row (as f32) for a sampler on the host.
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
  // As Create, for a step whose output is the whole logits row.
  static absl::StatusOr<std::unique_ptr<DecodeStep>> CreateForLogits(const LlamaModel& model, KvCache& cache);

  // Runs `token` at position `pos` and returns the greedy next token (a
  // step from Create). InvalidArgument for a token or position out of range.
  absl::StatusOr<int32_t> Greedy(int32_t token, int64_t pos);
  // Runs `token` at position `pos` and returns its logits ([vocab_size]
  // floats; a step from CreateForLogits).
  absl::StatusOr<std::vector<float>> Logits(int32_t token, int64_t pos);

  // The vocabulary a greedy step picks from; 0 for a logits step.
  int64_t greedy_vocab() const { return vocab_; }

 private:
  DecodeStep() = default;
  // `vocab` 0: the logits step.
  static absl::StatusOr<std::unique_ptr<DecodeStep>> Make(const LlamaModel& model, KvCache& cache, int64_t vocab);
  // Writes `token` into the step's input and runs it at `pos`.
  absl::StatusOr<std::vector<TensorData>> Run(int32_t token, int64_t pos);

  std::shared_ptr<CudaExecutor> gpu_;
  int64_t vocab_ = 0, model_vocab_ = 0, context_ = 0;
  Tensor token_;                 // i32 [1] on the GPU: the step's input id
  std::optional<Symbol> position_;
  std::vector<Tensor> outputs_;  // the greedy token or the logits, then the cache's updates
  Trace trace_;
  std::shared_ptr<const CudaExecutor::Plan> plan_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_DECODE_STEP_H_
