// A decode step recorded once and run for every token on a GPU. Each step of
// a decode has the same trace with a new position, so the step of one token
// at a symbolic position is recorded and planned once; a token then writes
// its id into the step's input buffer, binds the position and runs the
// plan (replayed from a CUDA graph where the executor has graphs on),
// without recording, collecting or hashing a trace. A greedy or sampled step
// picks its token on the GPU and reads back only that id (a sampled step
// writes its coin beside the token); a logits step reads back the logits row
// (as f32).
#ifndef KILN_MODELS_DECODE_STEP_H_
#define KILN_MODELS_DECODE_STEP_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "models/llama.h"
#include "models/sampler.h"
#include "optimizer/cuda_executor.h"
#include "tensor/trace.h"

namespace kiln::models {

// What a step computes from its logits row.
struct StepHead {
  enum class Kind { kLogits, kGreedy, kSampled };
  Kind kind = Kind::kLogits;
  int64_t vocab = 0;  // the tokens a greedy or sampled step picks among
  float temperature = 0, top_p = 1;  // a sampled step's (DeviceSampledToken)

  static StepHead Logits() { return {}; }
  static StepHead Greedy(int64_t vocab) { return {.kind = Kind::kGreedy, .vocab = vocab}; }
  // Temperature 0 is Greedy.
  static StepHead Sampled(int64_t vocab, const Sampler::Options& options);
  bool operator==(const StepHead&) const = default;
};

class DecodeStep {
 public:
  // The step of `model` (on a GPU) over `cache` (realized there), computing
  // `head`. Each Run updates `cache`'s buffers in place: while the step is
  // in use nothing else may write them, and the step must go before `cache`
  // is fed any other way (Session does both). InvalidArgument for a greedy
  // or sampled head over no tokens or more than the model has, or invalid
  // sampling options.
  static absl::StatusOr<std::unique_ptr<DecodeStep>> Create(const LlamaModel& model, KvCache& cache,
                                                            const StepHead& head);

  // Runs `token` at position `pos` and returns the greedy next token (a
  // greedy step). InvalidArgument for a token or position out of range.
  absl::StatusOr<int32_t> Greedy(int32_t token, int64_t pos);
  // As Greedy, for a sampled step: `coin` in [0, 1) is the draw's
  // randomness (Sampler::NextUniform).
  absl::StatusOr<int32_t> Sampled(int32_t token, int64_t pos, double coin);
  // Runs `token` at position `pos` and returns its logits ([vocab_size]
  // floats; a logits step).
  absl::StatusOr<std::vector<float>> Logits(int32_t token, int64_t pos);

  const StepHead& head() const { return head_; }

 private:
  DecodeStep() = default;
  // Writes `token` (and a sampled step's `coin`) into the step's inputs and
  // runs it at `pos`.
  absl::StatusOr<std::vector<TensorData>> Run(int32_t token, int64_t pos, float coin = 0);
  // The picked token read back and checked (a greedy or sampled step).
  absl::StatusOr<int32_t> Picked(const std::vector<TensorData>& results) const;

  std::shared_ptr<CudaExecutor> gpu_;
  StepHead head_;
  int64_t model_vocab_ = 0, context_ = 0;
  DType logits_dtype_ = DType::kF32;  // kLogits: the model's dtype, read back as it is
  Tensor token_;                 // i32 [1] on the GPU: the step's input id
  Tensor coin_;                  // f32 [1] on the GPU: a sampled step's coin
  std::optional<Symbol> position_;
  std::vector<Tensor> outputs_;  // the token or the logits, then the cache's updates
  Trace trace_;
  std::shared_ptr<const CudaExecutor::Plan> plan_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_DECODE_STEP_H_
