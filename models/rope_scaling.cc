#include "models/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::models {
namespace {

// YaRN's inverse of the wavelength formula: the pair index at which a
// frequency turns `rotations` times over `context` positions.
double CorrectionDim(double rotations, double dim, double theta, double context) {
  return dim * std::log(context / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta));
}

}  // namespace

std::string RopeScaling::ToString() const {
  switch (type) {
    case Type::kDefault:
      return "none";
    case Type::kLinear:
      return absl::StrCat("linear (factor ", factor, ")");
    case Type::kLlama3:
      return absl::StrCat("llama3 (factor ", factor, ", low ", low_freq_factor, ", high ",
                          high_freq_factor, ", original context ",
                          original_max_position_embeddings, ")");
    case Type::kYarn:
      return absl::StrCat("yarn (factor ", factor, ", beta ", beta_fast, "/", beta_slow,
                          ", original context ", original_max_position_embeddings,
                          attention_factor ? absl::StrCat(", attention ", *attention_factor) : "",
                          ")");
    case Type::kFactors:
      return absl::StrCat("per-pair factors (", factors.size(), " pairs)");
  }
  return "?";
}

absl::StatusOr<RopeFrequencies> ComputeRopeFrequencies(double theta, int64_t head_dim,
                                                       const RopeScaling& s) {
  const auto bad = [](auto&&... why) {
    return absl::InvalidArgumentError(absl::StrCat("RoPE scaling: ", why...));
  };
  if (!(theta > 1) || !std::isfinite(theta)) return bad("rope_theta must exceed 1, got ", theta);
  if (head_dim <= 0 || head_dim % 2 != 0) return bad("the head dim must be even, got ", head_dim);
  const int64_t half = head_dim / 2;
  const double dim = static_cast<double>(head_dim);
  RopeFrequencies out;
  out.inv_freq.resize(half);
  for (int64_t i = 0; i < half; ++i) out.inv_freq[i] = 1.0 / std::pow(theta, 2.0 * i / dim);
  const bool scaled = s.type == RopeScaling::Type::kLinear ||
                      s.type == RopeScaling::Type::kLlama3 || s.type == RopeScaling::Type::kYarn;
  if (scaled && (!(s.factor >= 1) || !std::isfinite(s.factor))) {
    return bad("\"factor\" must be at least 1, got ", s.factor);
  }
  switch (s.type) {
    case RopeScaling::Type::kDefault:
      break;
    case RopeScaling::Type::kLinear:
      for (double& f : out.inv_freq) f /= s.factor;
      break;
    case RopeScaling::Type::kLlama3: {
      if (s.original_max_position_embeddings <= 0) {
        return bad("llama3 needs a positive \"original_max_position_embeddings\"");
      }
      if (!(s.high_freq_factor > s.low_freq_factor) || !(s.low_freq_factor > 0)) {
        return bad("llama3 needs 0 < \"low_freq_factor\" < \"high_freq_factor\", got ",
                   s.low_freq_factor, " and ", s.high_freq_factor);
      }
      const double context = static_cast<double>(s.original_max_position_embeddings);
      const double low_wavelen = context / s.low_freq_factor;
      const double high_wavelen = context / s.high_freq_factor;
      for (double& f : out.inv_freq) {
        const double wavelen = 2 * std::numbers::pi / f;
        if (wavelen > low_wavelen) {
          f /= s.factor;
        } else if (wavelen >= high_wavelen) {
          const double smooth =
              (context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
          f = (1 - smooth) * f / s.factor + smooth * f;
        }
      }
      break;
    }
    case RopeScaling::Type::kYarn: {
      if (s.original_max_position_embeddings <= 0) {
        return bad("yarn needs a positive original context (\"original_max_position_embeddings\" "
                   "or \"max_position_embeddings\")");
      }
      if (!(s.beta_fast > 0) || !(s.beta_slow > 0)) {
        return bad("yarn needs positive \"beta_fast\" and \"beta_slow\"");
      }
      const double context = static_cast<double>(s.original_max_position_embeddings);
      double low = CorrectionDim(s.beta_fast, dim, theta, context);
      double high = CorrectionDim(s.beta_slow, dim, theta, context);
      if (s.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
      }
      low = std::max(low, 0.0);
      high = std::min(high, dim - 1);
      if (low == high) high += 0.001;  // a ramp of zero width
      for (int64_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
        const double extrapolation = 1 - ramp;  // the share of the unscaled frequency
        const double base = out.inv_freq[i];
        out.inv_freq[i] = base / s.factor * (1 - extrapolation) + base * extrapolation;
      }
      out.attention_scale = s.attention_factor.value_or(
          s.factor <= 1 ? 1.0 : 0.1 * std::log(s.factor) + 1.0);
      if (!(out.attention_scale > 0) || !std::isfinite(out.attention_scale)) {
        return bad("yarn's \"attention_factor\" must be positive, got ", out.attention_scale);
      }
      break;
    }
    case RopeScaling::Type::kFactors: {
      if (static_cast<int64_t>(s.factors.size()) != half) {
        return bad(s.factors.size(), " frequency factors for a head of ", half, " pairs");
      }
      for (int64_t i = 0; i < half; ++i) {
        if (!(s.factors[i] > 0) || !std::isfinite(s.factors[i])) {
          return bad("frequency factor ", i, " is ", s.factors[i], ", not positive");
        }
        out.inv_freq[i] /= s.factors[i];
      }
      break;
    }
  }
  return out;
}

}  // namespace kiln::models
