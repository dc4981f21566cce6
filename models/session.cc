#include "models/session.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"

namespace kiln::models {

absl::StatusOr<Session> Session::Create(const LlamaModel& model) {
  absl::StatusOr<KvCache> cache = model.NewCache(model.device());
  if (!cache.ok()) return cache.status();
  return Session(model, *std::move(cache));
}

absl::StatusOr<std::vector<float>> Session::Feed(absl::Span<const int32_t> tokens) {
  using Clock = std::chrono::steady_clock;
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return absl::InvalidArgumentError("session: no tokens to feed");
  if (size() + n > context()) {
    return absl::InvalidArgumentError(absl::StrCat("session: ", size(), " tokens and ", n,
                                                   " more exceed the context of ", context(),
                                                   " positions (--context)"));
  }
  const Clock::time_point t0 = Clock::now();
  const Symbol pos = model_->PositionSymbol(n);
  const std::vector<int32_t> ids(tokens.begin(), tokens.end());
  const Tensor logits = model_->Forward(Tensor::FromHost<int32_t>(ids, {n}), Dim(pos), cache_);
  std::vector<Tensor> outputs = {logits};
  outputs.insert(outputs.end(), cache_.k.begin(), cache_.k.end());
  outputs.insert(outputs.end(), cache_.v.begin(), cache_.v.end());
  const Clock::time_point t1 = Clock::now();
  if (absl::Status s = RealizeAll(outputs, {{pos, size()}}); !s.ok()) return s;
  absl::StatusOr<std::vector<float>> row = logits.to_host<float>();
  trace_seconds_ += std::chrono::duration<double>(t1 - t0).count();
  realize_seconds_ += std::chrono::duration<double>(Clock::now() - t1).count();
  if (row.ok()) tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  return row;
}

void Session::Rewind(int n) {
  if (n >= 0 && n < size()) tokens_.resize(n);
}

}  // namespace kiln::models
