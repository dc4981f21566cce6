#include "models/session.h"

#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "models/device_greedy.h"
#include "models/device_sampler.h"
#include "ops/ops.h"

namespace kiln::models {

absl::StatusOr<Session> Session::Create(const LlamaModel& model) {
  absl::StatusOr<KvCache> cache = model.NewCache(model.device());
  if (!cache.ok()) return cache.status();
  return Session(model, *std::move(cache));
}

absl::StatusOr<Tensor> Session::Step(absl::Span<const int32_t> tokens,
                                     const std::function<Tensor(const Tensor&)>& head) {
  using Clock = std::chrono::steady_clock;
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return absl::InvalidArgumentError("session: no tokens to feed");
  if (size() + n > context()) {
    return absl::InvalidArgumentError(absl::StrCat("session: ", size(), " tokens and ", n,
                                                   " more exceed the context of ", context(),
                                                   " positions (--context)"));
  }
  step_.reset();  // the step below writes the cache its own way
  const Clock::time_point t0 = Clock::now();
  const Symbol pos = model_->PositionSymbol(n);
  const std::vector<int32_t> ids(tokens.begin(), tokens.end());
  const Tensor out = head(model_->Forward(Tensor::FromHost<int32_t>(ids, {n}), Dim(pos), cache_));
  std::vector<Tensor> outputs = {out};
  outputs.insert(outputs.end(), cache_.k.begin(), cache_.k.end());
  outputs.insert(outputs.end(), cache_.v.begin(), cache_.v.end());
  const Clock::time_point t1 = Clock::now();
  trace_seconds_ += std::chrono::duration<double>(t1 - t0).count();
  const absl::Status s = RealizeAll(outputs, {{pos, size()}});
  realize_seconds_ += std::chrono::duration<double>(Clock::now() - t1).count();
  if (!s.ok()) return s;
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  return out;
}

DecodeStep* Session::ReplayedStep(const StepHead& head) {
  if (!replay_steps_ || model_->device().type != DeviceType::kCuda || size() >= context()) return nullptr;
  if (step_ != nullptr && step_->head() == head) return step_.get();
  step_.reset();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<DecodeStep>> step = DecodeStep::Create(*model_, cache_, head);
  trace_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!step.ok()) {
    // Not a reason to stop generating: every step is recorded instead.
    std::fprintf(stderr, "kiln: the decode step cannot be recorded once (%s); recording every step\n",
                 step.status().ToString().c_str());
    replay_steps_ = false;
    return nullptr;
  }
  step_ = *std::move(step);
  return step_.get();
}

absl::StatusOr<std::vector<float>> Session::Feed(absl::Span<const int32_t> tokens) {
  if (DecodeStep* step = tokens.size() == 1 ? ReplayedStep(StepHead::Logits()) : nullptr; step != nullptr) {
    const auto run = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<float>> row = step->Logits(tokens[0], size());
    realize_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - run).count();
    if (row.ok()) tokens_.push_back(tokens[0]);
    return row;
  }
  absl::StatusOr<Tensor> logits = Step(tokens, [](const Tensor& t) { return t; });
  if (!logits.ok()) return logits.status();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<float>> row = logits->to_host<float>();
  realize_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

absl::Status Session::CheckVocab(int64_t vocab) const {
  if (vocab >= 1 && vocab <= model_->config().vocab_size) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("session: a pick among ", vocab, " of the model's ", model_->config().vocab_size, " logits"));
}

absl::StatusOr<int32_t> Session::FeedPicked(absl::Span<const int32_t> tokens, const StepHead& head,
                                            const std::function<absl::StatusOr<int32_t>(DecodeStep&)>& run,
                                            const std::function<Tensor(const Tensor&)>& pick) {
  if (absl::Status s = CheckVocab(head.vocab); !s.ok()) return s;
  if (DecodeStep* step = tokens.size() == 1 ? ReplayedStep(head) : nullptr; step != nullptr) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<int32_t> next = run(*step);
    realize_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (next.ok()) tokens_.push_back(tokens[0]);
    return next;
  }
  absl::StatusOr<Tensor> token = Step(tokens, pick);
  if (!token.ok()) return token.status();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<int32_t>> id = token->to_host<int32_t>();
  realize_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!id.ok()) return id.status();
  if (absl::Status s = DeviceGreedyError((*id)[0], head.vocab); !s.ok()) return s;
  return (*id)[0];
}

absl::StatusOr<int32_t> Session::FeedGreedy(absl::Span<const int32_t> tokens, int64_t vocab) {
  const int64_t pos = size();
  return FeedPicked(
      tokens, StepHead::Greedy(vocab), [&](DecodeStep& step) { return step.Greedy(tokens[0], pos); },
      [vocab](const Tensor& logits) { return DeviceGreedyToken(logits, vocab); });
}

absl::StatusOr<int32_t> Session::FeedSampled(absl::Span<const int32_t> tokens, int64_t vocab, Sampler& sampler) {
  const Sampler::Options& options = sampler.options();
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (model_->device().type != DeviceType::kCpu && device_sampling_) {
    absl::StatusOr<int32_t> drawn;
    if (options.temperature == 0) {
      drawn = FeedGreedy(tokens, vocab);
    } else {
      const double coin = sampler.NextUniform();
      const int64_t pos = size();
      const Device device = model_->device();
      drawn = FeedPicked(
          tokens, StepHead::Sampled(vocab, options),
          [&](DecodeStep& step) { return step.Sampled(tokens[0], pos, coin); },
          [&](const Tensor& logits) {
            const Tensor draw = to(Tensor::FromHost<float>({static_cast<float>(coin)}, {1}), device);
            return DeviceSampledToken(logits, vocab, options, draw);
          });
    }
    // Bad input (a token, a position, NaN logits) is the caller's to see;
    // a pick the device cannot run is not a reason to stop generating. A
    // failed feed wrote at most the cache positions the next one rewrites.
    if (drawn.ok() || drawn.status().code() == absl::StatusCode::kInvalidArgument) return drawn;
    std::fprintf(stderr, "kiln: picking the token on the GPU failed (%s); the host samples from now on\n",
                 drawn.status().ToString().c_str());
    device_sampling_ = false;
  }
  if (absl::Status s = CheckVocab(vocab); !s.ok()) return s;
  absl::StatusOr<std::vector<float>> logits = Feed(tokens);
  if (!logits.ok()) return logits.status();
  return sampler.Sample(absl::MakeConstSpan(logits->data(), vocab));
}

void Session::Rewind(int n) {
  if (n >= 0 && n < size()) tokens_.resize(n);
}

}  // namespace kiln::models
