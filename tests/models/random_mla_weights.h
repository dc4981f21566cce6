// Random weights for an MLA config, for tests: the projections normal(0,
// `scale`), the latent's norm weight normal(0, 1), made realized on the CPU
// with consecutive seeds from `seed`, then moved to `device`.
#ifndef KILN_TESTS_MODELS_RANDOM_MLA_WEIGHTS_H_
#define KILN_TESTS_MODELS_RANDOM_MLA_WEIGHTS_H_

#include "gtest/gtest.h"
#include "models/mla.h"
#include "ops/ops.h"

namespace kiln::testing {

inline models::MlaWeights RandomMlaWeights(const models::MlaConfig& c, uint64_t seed, double scale,
                                           Device device = Device::Cpu()) {
  auto w = [&](Shape shape, double s) {
    Tensor t = random_normal(shape, seed++, 0, s);
    EXPECT_TRUE(t.realize().ok());
    if (device.type != DeviceType::kCpu) {
      t = to(t, device);
      EXPECT_TRUE(t.realize().ok());
    }
    return t;
  };
  const int64_t h = c.n_heads, hd = c.head_dim, l = c.latent_dim;
  return {.wq = w({c.dim, h * hd}, scale), .w_dkv = w({c.dim, l}, scale), .kv_norm = w({l}, 1),
          .w_uk = w({h, l, hd}, scale), .w_uv = w({h, l, hd}, scale), .wo = w({h * hd, c.dim}, scale)};
}

}  // namespace kiln::testing

#endif  // KILN_TESTS_MODELS_RANDOM_MLA_WEIGHTS_H_
