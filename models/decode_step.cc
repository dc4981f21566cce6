#include "models/decode_step.h"

#include "absl/strings/str_cat.h"
#include "models/device_greedy.h"
#include "models/device_sampler.h"
#include "ops/ops.h"
#include "tensor/convert.h"

namespace kiln::models {

StepHead StepHead::Sampled(int64_t vocab, const Sampler::Options& options) {
  if (options.temperature == 0) return Greedy(vocab);
  return {.kind = Kind::kSampled, .vocab = vocab, .temperature = options.temperature, .top_p = options.top_p};
}

absl::StatusOr<std::unique_ptr<DecodeStep>> DecodeStep::Create(const LlamaModel& model, KvCache& cache,
                                                               const StepHead& head) {
  if (head.kind != StepHead::Kind::kLogits && (head.vocab < 1 || head.vocab > model.config().vocab_size)) {
    return absl::InvalidArgumentError(absl::StrCat("DecodeStep: a pick among ", head.vocab, " of the model's ",
                                                   model.config().vocab_size, " logits"));
  }
  const Sampler::Options sampling{.temperature = head.temperature, .top_p = head.top_p};
  if (head.kind == StepHead::Kind::kSampled) {
    if (absl::Status s = sampling.Validate(); !s.ok()) return s;
    if (head.temperature == 0) return absl::InvalidArgumentError("DecodeStep: sampling at temperature 0 is greedy");
  }
  std::shared_ptr<CudaExecutor> gpu = GetCudaExecutor();
  if (gpu == nullptr || model.device().type != DeviceType::kCuda) {
    return absl::FailedPreconditionError("DecodeStep: the model is not on a GPU");
  }
  for (const std::vector<Tensor>* part : {&cache.k, &cache.v}) {
    for (const Tensor& t : *part) {
      if (!t.is_realized() || t.device().type != DeviceType::kCuda) {
        return absl::FailedPreconditionError("DecodeStep: the KV cache must be realized on the GPU");
      }
    }
  }
  auto step = std::unique_ptr<DecodeStep>(new DecodeStep());
  step->gpu_ = std::move(gpu);
  step->head_ = head;
  step->model_vocab_ = model.config().vocab_size;
  step->logits_dtype_ = model.config().dtype;
  step->context_ = model.config().max_seq_len;
  step->token_ = to(Tensor::FromHost<int32_t>({0}, {1}), Device::Cuda());
  step->coin_ = to(Tensor::FromHost<float>({0}, {1}), Device::Cuda());
  if (absl::Status s = RealizeAll({step->token_, step->coin_}); !s.ok()) return s;
  step->position_ = model.PositionSymbol(1);

  // Forward replaces the cache's tensors by their updates; the step writes
  // those into the buffers the cache holds now, so the cache keeps them.
  const KvCache leaves = cache;
  const Tensor logits = model.Forward(step->token_, Dim(*step->position_), cache);
  switch (head.kind) {
    // The logits in the model's dtype, as a step recorded anew returns
    // them (a cast inside the step would keep the product's f32 sum).
    case StepHead::Kind::kLogits: step->outputs_ = {logits}; break;
    case StepHead::Kind::kGreedy: step->outputs_ = {DeviceGreedyToken(logits, head.vocab)}; break;
    case StepHead::Kind::kSampled:
      step->outputs_ = {DeviceSampledToken(logits, head.vocab, sampling, step->coin_)};
      break;
  }
  step->outputs_.insert(step->outputs_.end(), cache.k.begin(), cache.k.end());
  step->outputs_.insert(step->outputs_.end(), cache.v.begin(), cache.v.end());
  cache = leaves;
  absl::StatusOr<Trace> trace = Trace::Collect(step->outputs_);
  if (!trace.ok()) return trace.status();
  // Copies from the host (RoPE tables made there) do not depend on the
  // position: made once, here, they become leaves of the step.
  std::vector<Tensor> transfers;
  for (const Node* n : trace->nodes()) {
    for (const std::shared_ptr<Node>& in : n->inputs) {
      if (in->op == OpKind::kToDevice && !in->is_realized()) transfers.push_back(Tensor(in));
    }
  }
  if (!transfers.empty()) {
    if (absl::Status s = RealizeAll(transfers); !s.ok()) return s;
    trace = Trace::Collect(step->outputs_);
    if (!trace.ok()) return trace.status();
  }
  for (const Node* n : trace->nodes()) {
    if (n->device.type != DeviceType::kCuda) {
      return absl::FailedPreconditionError(absl::StrCat("DecodeStep: the step reads a ", OpName(n->op), " ",
                                                        n->shape.ToString(), " on ", n->device.ToString(),
                                                        "; it must run on the GPU alone"));
    }
  }
  step->trace_ = *std::move(trace);
  absl::StatusOr<std::shared_ptr<const CudaExecutor::Plan>> plan = step->gpu_->PlanInPlace(step->trace_);
  if (!plan.ok()) return plan.status();
  step->plan_ = *std::move(plan);
  return step;
}

absl::StatusOr<std::vector<TensorData>> DecodeStep::Run(int32_t token, int64_t pos, float coin) {
  if (token < 0 || token >= model_vocab_) {
    return absl::InvalidArgumentError(
        absl::StrCat("decode step: token ", token, " is outside the model's vocabulary of ", model_vocab_));
  }
  if (pos < 0 || pos >= context_) {
    return absl::InvalidArgumentError(
        absl::StrCat("decode step: position ", pos, " is outside the context of ", context_, " positions"));
  }
  const auto address = [](const Tensor& t, size_t element) {
    const TensorData& data = t.node()->data;
    return reinterpret_cast<jit::CUdeviceptr>(data.storage->data()) + data.offset * element;
  };
  if (absl::Status s = gpu_->context().CopyHostToDevice(address(token_, sizeof(token)), &token, sizeof(token));
      !s.ok()) {
    return s;
  }
  if (head_.kind == StepHead::Kind::kSampled) {
    if (absl::Status s = gpu_->context().CopyHostToDevice(address(coin_, sizeof(coin)), &coin, sizeof(coin));
        !s.ok()) {
      return s;
    }
  }
  return gpu_->RunPlanned(trace_, *plan_, {{*position_, pos}});
}

absl::StatusOr<std::vector<float>> DecodeStep::Logits(int32_t token, int64_t pos) {
  if (head_.kind != StepHead::Kind::kLogits) {
    return absl::FailedPreconditionError("decode step: this step picks a token and has no logits to read back");
  }
  absl::StatusOr<std::vector<TensorData>> results = Run(token, pos);
  if (!results.ok()) return results.status();
  const int64_t count = results->front().num_elements();
  std::vector<uint8_t> stored(static_cast<size_t>(count) * DTypeSize(logits_dtype_));
  if (absl::Status s = gpu_->CopyToHost(results->front(), logits_dtype_, stored.data()); !s.ok()) return s;
  std::vector<float> row(static_cast<size_t>(count));
  ConvertElements(logits_dtype_, stored.data(), DType::kF32, row.data(), count);
  return row;
}

absl::StatusOr<int32_t> DecodeStep::Picked(const std::vector<TensorData>& results) const {
  int32_t next = -1;
  if (absl::Status s = gpu_->CopyToHost(results.front(), DType::kI32, &next); !s.ok()) return s;
  if (absl::Status s = DeviceGreedyError(next, head_.vocab); !s.ok()) return s;
  return next;
}

absl::StatusOr<int32_t> DecodeStep::Greedy(int32_t token, int64_t pos) {
  if (head_.kind != StepHead::Kind::kGreedy) return absl::FailedPreconditionError("decode step: not a greedy step");
  absl::StatusOr<std::vector<TensorData>> results = Run(token, pos);
  if (!results.ok()) return results.status();
  return Picked(*results);
}

absl::StatusOr<int32_t> DecodeStep::Sampled(int32_t token, int64_t pos, double coin) {
  if (head_.kind != StepHead::Kind::kSampled) return absl::FailedPreconditionError("decode step: not a sampled step");
  if (!(coin >= 0 && coin < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("decode step: the coin ", coin, " is outside [0, 1)"));
  }
  absl::StatusOr<std::vector<TensorData>> results = Run(token, pos, static_cast<float>(coin));
  if (!results.ok()) return results.status();
  return Picked(*results);
}

}  // namespace kiln::models
