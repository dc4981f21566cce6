// A model's running state: the KV cache and the tokens it holds. Generation
// feeds a prompt and then one token per step; a chat keeps the session
// between turns and feeds only what the new turn adds (Rewind drops what the
// re-rendered conversation no longer shares).
#ifndef KILN_MODELS_SESSION_H_
#define KILN_MODELS_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "models/decode_step.h"
#include "models/llama.h"
#include "models/sampler.h"

namespace kiln::models {

class Session {
 public:
  // A zeroed cache on the model's device. `model` must outlive the session.
  static absl::StatusOr<Session> Create(const LlamaModel& model);

  // Runs `tokens` at the next positions and returns the logits of the last
  // ([vocab] floats). InvalidArgument when no tokens are given or they would
  // pass the context. On a GPU, one token at a time runs a DecodeStep
  // recorded once (set_replay_steps), reading back the logits row.
  absl::StatusOr<std::vector<float>> Feed(absl::Span<const int32_t> tokens);
  // As Feed, but returns the greedy token of the first `vocab` logits
  // (DeviceGreedyToken), computed on the model's device: a GPU step reads
  // back 4 bytes instead of the logits. On a GPU, one token at a time runs
  // a DecodeStep recorded once with set_replay_steps(true).
  absl::StatusOr<int32_t> FeedGreedy(absl::Span<const int32_t> tokens, int64_t vocab);
  // As FeedGreedy, drawing the token from the first `vocab` logits as
  // `sampler` does (at temperature 0, greedy). On a GPU the draw is made
  // there (DeviceSampledToken, with the sampler's next coin) and only the
  // id is read back; on the CPU, the sampler draws from the logits row (on
  // a GPU too, after a pick there failed for a reason other than bad input).
  absl::StatusOr<int32_t> FeedSampled(absl::Span<const int32_t> tokens, int64_t vocab, Sampler& sampler);
  // Whether Feed, FeedGreedy and FeedSampled of one token rerun a recorded
  // DecodeStep (the default) instead of recording the step's trace anew.
  void set_replay_steps(bool replay) { replay_steps_ = replay; }

  // Keeps the first `n` tokens (n <= size()); the cache past them is
  // overwritten by the next Feed.
  void Rewind(int n);

  const std::vector<int32_t>& tokens() const { return tokens_; }
  int size() const { return static_cast<int>(tokens_.size()); }
  int context() const { return model_->config().max_seq_len; }

  // Time spent recording traces and realizing them, over every Feed.
  double trace_seconds() const { return trace_seconds_; }
  double realize_seconds() const { return realize_seconds_; }

 private:
  Session(const LlamaModel& model, KvCache cache) : model_(&model), cache_(std::move(cache)) {}
  // Records the step of `tokens` and realizes `head(logits)` with the cache;
  // returns the realized head.
  absl::StatusOr<Tensor> Step(absl::Span<const int32_t> tokens, const std::function<Tensor(const Tensor&)>& head);
  // The recorded decode step computing `head` for a one-token feed, made if
  // need be; nullptr where none is used (replay off, not a GPU, the context
  // full, or the step could not be recorded).
  DecodeStep* ReplayedStep(const StepHead& head);
  // InvalidArgument unless 1 <= vocab <= the model's vocabulary.
  absl::Status CheckVocab(int64_t vocab) const;
  // Feeds `tokens` and reads back the token that `pick` makes of the
  // logits on the device (a one-token feed runs `head`'s recorded step,
  // through `run`), checked against `vocab`.
  absl::StatusOr<int32_t> FeedPicked(absl::Span<const int32_t> tokens, const StepHead& head,
                                     const std::function<absl::StatusOr<int32_t>(DecodeStep&)>& run,
                                     const std::function<Tensor(const Tensor&)>& pick);

  const LlamaModel* model_;
  KvCache cache_;
  bool replay_steps_ = true;
  // Whether FeedSampled picks on the device (until a pick there fails).
  bool device_sampling_ = true;
  // The recorded decode step over cache_; dropped before cache_ is fed any
  // other way.
  std::unique_ptr<DecodeStep> step_;
  std::vector<int32_t> tokens_;
  double trace_seconds_ = 0;
  double realize_seconds_ = 0;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_SESSION_H_
