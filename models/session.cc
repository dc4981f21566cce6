#include "models/session.h"

#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "models/device_greedy.h"
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

DecodeStep* Session::ReplayedStep(int64_t vocab) {
  if (!replay_steps_ || model_->device().type != DeviceType::kCuda || size() >= context()) return nullptr;
  if (step_ != nullptr && step_->greedy_vocab() == vocab) return step_.get();
  step_.reset();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<DecodeStep>> step =
      vocab > 0 ? DecodeStep::Create(*model_, cache_, vocab) : DecodeStep::CreateForLogits(*model_, cache_);
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
  if (DecodeStep* step = tokens.size() == 1 ? ReplayedStep(0) : nullptr; step != nullptr) {
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

absl::StatusOr<int32_t> Session::FeedGreedy(absl::Span<const int32_t> tokens, int64_t vocab) {
  if (vocab < 1 || vocab > model_->config().vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("session: greedy over ", vocab, " of the model's ",
                                                   model_->config().vocab_size, " logits"));
  }
  if (DecodeStep* step = tokens.size() == 1 ? ReplayedStep(vocab) : nullptr; step != nullptr) {
    const auto run = std::chrono::steady_clock::now();
    absl::StatusOr<int32_t> next = step->Greedy(tokens[0], size());
    realize_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - run).count();
    if (next.ok()) tokens_.push_back(tokens[0]);
    return next;
  }
  absl::StatusOr<Tensor> token = Step(tokens, [vocab](const Tensor& t) { return DeviceGreedyToken(t, vocab); });
  if (!token.ok()) return token.status();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<int32_t>> id = token->to_host<int32_t>();
  realize_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!id.ok()) return id.status();
  if (absl::Status s = DeviceGreedyError((*id)[0], vocab); !s.ok()) return s;
  return (*id)[0];
}

void Session::Rewind(int n) {
  if (n >= 0 && n < size()) tokens_.resize(n);
}

}  // namespace kiln::models
