// Quantizing a model's weights at load (`--quantize q8_0|q4_0|q4_k`): the
// projection matrices and the classifier are packed into llama.cpp's block
// format and stay packed (ops/quant.h, PackedWeight); norms, biases and
// adapters keep their dtype.
#ifndef KILN_MODELS_QUANTIZE_WEIGHTS_H_
#define KILN_MODELS_QUANTIZE_WEIGHTS_H_

#include "absl/status/status.h"
#include "models/llama_weights.h"
#include "tensor/quant.h"

namespace kiln::models {

// Quantizes in place every layer's wq, wk, wv, wo, w_gate, w_up and w_down
// and the classifier (the embedding table too where it is the classifier,
// tied), on the host; weights packed already stay as they are. The new
// blocks are host tensors: move the model with LlamaModel::To. Errors name
// the weight: InvalidArgument where a row is not whole blocks of `format`
// (32 values for Q8_0 and Q4_0, 256 for Q4_K) or holds NaN or infinity; Unimplemented for
// formats kiln does not encode.
absl::Status QuantizeLinearWeights(LlamaWeights& weights, bool tied_embeddings, QuantFormat format);

}  // namespace kiln::models

#endif  // KILN_MODELS_QUANTIZE_WEIGHTS_H_
