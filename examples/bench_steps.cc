#include "examples/bench_steps.h"

#include <algorithm>
#include <chrono>

#include "models/device_greedy.h"
#include "ops/ops.h"

namespace kiln::cli {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

absl::StatusOr<double> TimedStep(const models::LlamaModel& model, models::KvCache& cache,
                                 int64_t n, int64_t pos, StepTimes* times, bool greedy) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i) {
    ids[i] = static_cast<int32_t>((pos + i) * 7919 % model.config().vocab_size);
  }
  const Symbol symbol = model.PositionSymbol(n);
  Tensor logits = model.Forward(Tensor::FromHost<int32_t>(ids, {n}), Dim(symbol), cache);
  if (greedy) logits = models::DeviceGreedyToken(logits, model.config().vocab_size);
  std::vector<Tensor> all = {logits};
  all.insert(all.end(), cache.k.begin(), cache.k.end());
  all.insert(all.end(), cache.v.begin(), cache.v.end());
  const Clock::time_point traced = Clock::now();
  if (absl::Status s = RealizeAll(all, {{symbol, pos}}); !s.ok()) return s;
  const Clock::time_point realized = Clock::now();
  if (greedy) {
    absl::StatusOr<std::vector<int32_t>> token = logits.to_host<int32_t>();
    if (!token.ok()) return token.status();
  } else {
    absl::StatusOr<std::vector<float>> host = logits.to_host<float>();
    if (!host.ok()) return host.status();
  }
  const Clock::time_point end = Clock::now();
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  if (times != nullptr) {
    times->trace += seconds(traced - start);
    times->realize += seconds(realized - traced);
    times->read_back += seconds(end - realized);
  }
  return seconds(end - start);
}

}  // namespace kiln::cli
