#include "models/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace kiln::models {

absl::Status Sampler::Options::Validate() const {
  if (!std::isfinite(temperature) || temperature < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampler: temperature must be finite and >= 0, got ", temperature));
  }
  if (std::isnan(top_p)) return absl::InvalidArgumentError("sampler: top_p is NaN");
  return absl::OkStatus();
}

Sampler::Sampler(Options options)
    : options_(options), options_status_(options.Validate()), state_(options.seed) {}

double Sampler::NextUniform() {
  state_ += 0x9E3779B97F4A7C15ull;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;  // the top 53 bits
}

absl::StatusOr<int32_t> Sampler::Sample(absl::Span<const float> logits) {
  if (!options_status_.ok()) return options_status_;
  if (logits.empty()) return absl::InvalidArgumentError("sampler: empty logits");
  if (logits.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampler: ", logits.size(), " logits do not fit int32 token ids"));
  }
  const int32_t n = static_cast<int32_t>(logits.size());
  // -inf is a masked token and fine; NaN and +inf have no meaningful softmax.
  int32_t best = -1;
  for (int32_t i = 0; i < n; ++i) {
    const float v = logits[i];
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
      return absl::InvalidArgumentError(absl::StrCat("sampler: logit ", i, " of ", n, " is ", v));
    }
    // Strict `>`: the lowest index wins ties, as in llama2.c's argmax.
    if (v != -std::numeric_limits<float>::infinity() && (best < 0 || v > logits[best])) best = i;
  }
  if (best < 0) {
    return absl::InvalidArgumentError(absl::StrCat("sampler: all ", n, " logits are -inf"));
  }
  if (options_.temperature == 0) return best;

  // Softmax in double, shifted by the max so that exp cannot overflow.
  const double max_logit = logits[best];
  const double temperature = options_.temperature;
  probs_.resize(n);
  double total = 0;
  for (int32_t i = 0; i < n; ++i) {
    probs_[i] = std::exp((static_cast<double>(logits[i]) - max_logit) / temperature);
    total += probs_[i];
  }
  // total >= 1: the max term is exp(0).
  for (double& p : probs_) p /= total;

  const double top_p = options_.top_p;
  const double coin = NextUniform();
  if (top_p <= 0 || top_p >= 1) {
    double cumulative = 0;
    int32_t last = best;
    for (int32_t i = 0; i < n; ++i) {
      if (probs_[i] == 0) continue;
      cumulative += probs_[i];
      last = i;
      if (coin < cumulative) return i;
    }
    return last;  // rounding left the coin above the final sum
  }

  // Tokens with p < (1 - top_p) / (n - 1), other than the most likely one,
  // together hold less than 1 - top_p, so the nucleus is complete before any
  // of them is reached: only the rest is sorted. (llama2.c omits the `best`
  // exception and indexes out of bounds when top_p < 1/n and probs are flat.)
  const double cutoff = n > 1 ? (1 - top_p) / (n - 1) : 0;
  order_.clear();
  for (int32_t i = 0; i < n; ++i) {
    if (i == best || (probs_[i] >= cutoff && probs_[i] > 0)) order_.push_back(i);
  }
  // Ties broken by index so that the nucleus does not depend on the sort.
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    return probs_[a] != probs_[b] ? probs_[a] > probs_[b] : a < b;
  });
  double mass = 0;
  size_t size = order_.size();
  for (size_t k = 0; k < order_.size(); ++k) {
    mass += probs_[order_[k]];
    if (mass > top_p) {
      size = k + 1;
      break;
    }
  }
  // Renormalized: the coin is scaled to the nucleus mass instead.
  const double target = coin * mass;
  double cumulative = 0;
  for (size_t k = 0; k < size; ++k) {
    cumulative += probs_[order_[k]];
    if (target < cumulative) return order_[k];
  }
  return order_[size - 1];
}

}  // namespace kiln::models
