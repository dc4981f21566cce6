#include "tests/models/llama_reference.h"

#include <cmath>

#include "gtest/gtest.h"

namespace kiln::testing {
namespace {

std::vector<float> Read(const Tensor& t) {
  absl::StatusOr<std::vector<float>> v = t.to_host<float>();
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : std::vector<float>{};
}

// out[i] = sum_j w[i, j] x[j], w [rows, cols].
std::vector<float> MatVec(const std::vector<float>& w, const std::vector<float>& x, int rows) {
  const int cols = static_cast<int>(x.size());
  std::vector<float> out(rows);
  for (int i = 0; i < rows; ++i) {
    double acc = 0;
    for (int j = 0; j < cols; ++j) acc += double(w[size_t(i) * cols + j]) * x[j];
    out[i] = float(acc);
  }
  return out;
}

std::vector<float> RmsNorm(const std::vector<float>& x, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = float(w[i] * (scale * x[i]));
  return out;
}

// Weight slots in w_.
enum { kEmbedding, kFinalNorm, kClassifier, kPerLayer };
enum { kAttnNorm, kWq, kWk, kWv, kWo, kFfnNorm, kGate, kDown, kUp, kLayerSlots };

}  // namespace

ReferenceLlama::ReferenceLlama(const models::LoadedModel& model) : c_(model.config) {
  const models::LlamaWeights& w = model.weights;
  w_ = {Read(w.embedding), Read(w.final_norm), Read(w.classifier)};
  for (const auto& l : w.layers) {
    for (const Tensor* t : {&l.attention_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm,
                            &l.w_gate, &l.w_down, &l.w_up}) {
      w_.push_back(Read(*t));
    }
  }
  k_cache_.assign(c_.n_layers, {});
  v_cache_.assign(c_.n_layers, {});
}

std::vector<float> ReferenceLlama::Step(int token) {
  const int dim = c_.dim, head = c_.head_dim(), kv_dim = c_.kv_dim();
  std::vector<float> x(w_[kEmbedding].begin() + size_t(token) * dim,
                       w_[kEmbedding].begin() + size_t(token + 1) * dim);
  for (int l = 0; l < c_.n_layers; ++l) {
    const auto& W = [&](int slot) -> const std::vector<float>& {
      return w_[kPerLayer + l * kLayerSlots + slot];
    };
    std::vector<float> h = RmsNorm(x, W(kAttnNorm), c_.norm_eps);
    std::vector<float> q = MatVec(W(kWq), h, dim);
    std::vector<float> k = MatVec(W(kWk), h, kv_dim);
    std::vector<float> v = MatVec(W(kWv), h, kv_dim);
    for (int i = 0; i < dim; i += 2) {
      const int head_pos = i % head;
      const double freq = 1.0 / std::pow(c_.rope_theta, double(head_pos) / head);
      const double angle = pos_ * freq;
      const double cr = std::cos(angle), ci = std::sin(angle);
      for (std::vector<float>* vec : {&q, &k}) {
        if (vec == &k && i >= kv_dim) continue;
        const double a = (*vec)[i], b = (*vec)[i + 1];
        (*vec)[i] = float(a * cr - b * ci);
        (*vec)[i + 1] = float(a * ci + b * cr);
      }
    }
    k_cache_[l].insert(k_cache_[l].end(), k.begin(), k.end());
    v_cache_[l].insert(v_cache_[l].end(), v.begin(), v.end());
    std::vector<float> att_out(dim);
    const int group = c_.n_heads / c_.n_kv_heads;
    for (int hh = 0; hh < c_.n_heads; ++hh) {
      const int kh = hh / group;
      std::vector<double> scores(pos_ + 1);
      double m = -INFINITY;
      for (int t = 0; t <= pos_; ++t) {
        double s = 0;
        for (int i = 0; i < head; ++i) {
          s += double(q[hh * head + i]) * k_cache_[l][size_t(t) * kv_dim + kh * head + i];
        }
        scores[t] = s / std::sqrt(double(head));
        m = std::max(m, scores[t]);
      }
      double z = 0;
      for (double& s : scores) z += (s = std::exp(s - m));
      for (int i = 0; i < head; ++i) {
        double acc = 0;
        for (int t = 0; t <= pos_; ++t) {
          acc += scores[t] / z * v_cache_[l][size_t(t) * kv_dim + kh * head + i];
        }
        att_out[hh * head + i] = float(acc);
      }
    }
    std::vector<float> o = MatVec(W(kWo), att_out, dim);
    for (int i = 0; i < dim; ++i) x[i] += o[i];
    h = RmsNorm(x, W(kFfnNorm), c_.norm_eps);
    std::vector<float> g = MatVec(W(kGate), h, c_.hidden_dim);
    std::vector<float> u = MatVec(W(kUp), h, c_.hidden_dim);
    for (int i = 0; i < c_.hidden_dim; ++i) g[i] = float(g[i] / (1 + std::exp(-double(g[i]))) * u[i]);
    std::vector<float> d = MatVec(W(kDown), g, dim);
    for (int i = 0; i < dim; ++i) x[i] += d[i];
  }
  ++pos_;
  x = RmsNorm(x, w_[kFinalNorm], c_.norm_eps);
  return MatVec(w_[kClassifier], x, c_.vocab_size);
}

}  // namespace kiln::testing
