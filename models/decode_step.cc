#include "models/decode_step.h"

#include "absl/strings/str_cat.h"
#include "models/device_greedy.h"
#include "ops/ops.h"

namespace kiln::models {

absl::StatusOr<std::unique_ptr<DecodeStep>> DecodeStep::Create(const LlamaModel& model, KvCache& cache,
                                                               int64_t vocab) {
  if (vocab < 1 || vocab > model.config().vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("DecodeStep: greedy over ", vocab, " of the model's ",
                                                   model.config().vocab_size, " logits"));
  }
  return Make(model, cache, vocab);
}

absl::StatusOr<std::unique_ptr<DecodeStep>> DecodeStep::CreateForLogits(const LlamaModel& model, KvCache& cache) {
  return Make(model, cache, 0);
}

absl::StatusOr<std::unique_ptr<DecodeStep>> DecodeStep::Make(const LlamaModel& model, KvCache& cache,
                                                             int64_t vocab) {
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
  step->vocab_ = vocab;
  step->model_vocab_ = model.config().vocab_size;
  step->context_ = model.config().max_seq_len;
  step->token_ = to(Tensor::FromHost<int32_t>({0}, {1}), Device::Cuda());
  if (absl::Status s = step->token_.realize(); !s.ok()) return s;
  step->position_ = model.PositionSymbol(1);

  // Forward replaces the cache's tensors by their updates; the step writes
  // those into the buffers the cache holds now, so the cache keeps them.
  const KvCache leaves = cache;
  const Tensor logits = model.Forward(step->token_, Dim(*step->position_), cache);
  step->outputs_ = {vocab > 0 ? DeviceGreedyToken(logits, vocab) : cast(logits, DType::kF32)};
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

absl::StatusOr<std::vector<TensorData>> DecodeStep::Run(int32_t token, int64_t pos) {
  if (token < 0 || token >= model_vocab_) {
    return absl::InvalidArgumentError(
        absl::StrCat("decode step: token ", token, " is outside the model's vocabulary of ", model_vocab_));
  }
  if (pos < 0 || pos >= context_) {
    return absl::InvalidArgumentError(
        absl::StrCat("decode step: position ", pos, " is outside the context of ", context_, " positions"));
  }
  const TensorData& input = token_.node()->data;
  const jit::CUdeviceptr address =
      reinterpret_cast<jit::CUdeviceptr>(input.storage->data()) + input.offset * sizeof(int32_t);
  if (absl::Status s = gpu_->context().CopyHostToDevice(address, &token, sizeof(token)); !s.ok()) return s;
  return gpu_->RunPlanned(trace_, *plan_, {{*position_, pos}});
}

absl::StatusOr<std::vector<float>> DecodeStep::Logits(int32_t token, int64_t pos) {
  if (vocab_ != 0) return absl::FailedPreconditionError("decode step: a greedy step has no logits to read back");
  absl::StatusOr<std::vector<TensorData>> results = Run(token, pos);
  if (!results.ok()) return results.status();
  std::vector<float> row(static_cast<size_t>(results->front().num_elements()));
  if (absl::Status s = gpu_->CopyToHost(results->front(), DType::kF32, row.data()); !s.ok()) return s;
  return row;
}

absl::StatusOr<int32_t> DecodeStep::Greedy(int32_t token, int64_t pos) {
  if (vocab_ == 0) return absl::FailedPreconditionError("decode step: a logits step picks no token");
  absl::StatusOr<std::vector<TensorData>> results = Run(token, pos);
  if (!results.ok()) return results.status();
  int32_t next = -1;
  if (absl::Status s = gpu_->CopyToHost(results->front(), DType::kI32, &next); !s.ok()) return s;
  if (absl::Status s = DeviceGreedyError(next, vocab_); !s.ok()) return s;
  return next;
}

}  // namespace kiln::models
