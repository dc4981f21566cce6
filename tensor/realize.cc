// RealizeAll: check a trace's symbols and devices, then hand it to the
// executor of its device and turn the results into leaves.
#include <array>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "tensor/executor.h"
#include "tensor/tensor.h"

namespace kiln {
namespace {

struct Registry {
  std::mutex mutex;
  std::array<std::shared_ptr<Executor>, kNumDeviceTypes> executors;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

// Every symbol bound, within [0, max], and no name used with two bounds.
absl::Status CheckBindings(const Trace& trace, const Bindings& bindings) {
  absl::flat_hash_map<std::string, int64_t> bound_of_name;
  for (const Symbol& symbol : trace.Symbols()) {
    auto [it, inserted] = bound_of_name.emplace(symbol.name(), symbol.max_value());
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          "symbol '", symbol.name(), "' is declared with two upper bounds (", it->second,
          " and ", symbol.max_value(), ") in one trace"));
    }
    std::optional<int64_t> value = bindings.Find(symbol.info());
    if (!value) {
      return absl::FailedPreconditionError(absl::StrCat(
          "symbol '", symbol.name(), "' (upper bound ", symbol.max_value(),
          ") is unbound: pass its value in the Bindings given to realize()"));
    }
    if (*value < 0 || *value > symbol.max_value()) {
      return absl::OutOfRangeError(absl::StrCat("symbol '", symbol.name(), "' is bound to ",
                                                *value, ", outside its range [0, ",
                                                symbol.max_value(), "]"));
    }
  }
  return absl::OkStatus();
}

// Bound shapes that depend on several symbols can still go negative.
absl::Status CheckShapes(const Trace& trace, const Bindings& bindings) {
  for (const Node* node : trace.nodes()) {
    for (const Dim& d : node->shape) {
      if (d.is_concrete()) continue;
      absl::StatusOr<int64_t> v = d.Evaluate(bindings);
      if (!v.ok()) return v.status();
      if (*v < 0) {
        return absl::OutOfRangeError(absl::StrCat(OpName(node->op), ": dimension ",
                                                  d.ToString(), " of ", node->shape.ToString(),
                                                  " is negative (", *v, ") under the bindings"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterExecutor(DeviceType type, std::shared_ptr<Executor> executor) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.executors[static_cast<int>(type)] = std::move(executor);
}

std::shared_ptr<Executor> FindExecutor(DeviceType type) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  return registry.executors[static_cast<int>(type)];
}

namespace {


absl::Status NoExecutor(Device device) {
  return absl::UnavailableError(absl::StrCat(
      "realize: no executor is available for device ", device.ToString(),
      device.type == DeviceType::kCuda ? " (no usable GPU or CUDA driver was found)" : ""));
}

// Realizes the source of a transfer on its own device, then copies it over;
// the transfer node becomes a leaf on its device.
absl::Status Transfer(Node* node, const Bindings& bindings) {
  const std::shared_ptr<Node>& source = node->inputs[0];
  if (absl::Status s = RealizeAll({Tensor(source)}, bindings); !s.ok()) return s;
  const TensorData& from = source->data;
  TensorData to;
  if (node->device.type == DeviceType::kCpu) {
    std::shared_ptr<Executor> executor = FindExecutor(source->device.type);
    if (executor == nullptr) return NoExecutor(source->device);
    absl::StatusOr<TensorData> host = AllocateHostTensor(node->dtype, from.sizes);
    if (!host.ok()) return host.status();
    if (absl::Status s = executor->CopyToHost(from, node->dtype, host->storage->data()); !s.ok()) {
      return s;
    }
    to = *std::move(host);
  } else if (source->device.type == DeviceType::kCpu) {
    std::shared_ptr<Executor> executor = FindExecutor(node->device.type);
    if (executor == nullptr) return NoExecutor(node->device);
    absl::StatusOr<TensorData> device = executor->CopyFromHost(from, node->dtype);
    if (!device.ok()) return device.status();
    to = *std::move(device);
  } else {
    return absl::UnimplementedError(absl::StrCat("to: copies from ", source->device.ToString(),
                                                 " to ", node->device.ToString(),
                                                 " go through the host: use to(to(x, cpu), ...)"));
  }
  node->shape = Shape::FromExtents(to.sizes);
  node->data = std::move(to);
  node->op = OpKind::kLeaf;
  node->attrs = NoAttrs{};
  node->inputs.clear();
  return absl::OkStatus();
}

}  // namespace

absl::Status RealizeAll(absl::Span<const Tensor> tensors, const Bindings& bindings) {
  std::vector<Tensor> pending;
  for (const Tensor& t : tensors) {
    if (!t.ok()) return t.status();
    if (!t.is_realized()) pending.push_back(t);
  }
  if (pending.empty()) return absl::OkStatus();

  absl::StatusOr<Trace> trace = Trace::Collect(pending);
  if (!trace.ok()) return trace.status();
  // Transfers first: each splits the trace at a device boundary.
  bool transferred = false;
  for (Node* node : trace->nodes()) {
    if (node->op != OpKind::kToDevice || node->is_realized()) continue;
    if (absl::Status s = Transfer(node, bindings); !s.ok()) return s;
    transferred = true;
  }
  if (transferred) {
    pending.clear();
    for (const Tensor& t : tensors) {
      if (!t.is_realized()) pending.push_back(t);
    }
    if (pending.empty()) return absl::OkStatus();
    trace = Trace::Collect(pending);
    if (!trace.ok()) return trace.status();
  }
  const Device device = trace->outputs().front()->device;
  for (const Node* node : trace->nodes()) {
    if (!(node->device == device)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "realize: the trace mixes devices ", device.ToString(), " and ",
          node->device.ToString(), " (", OpName(node->op), " ", node->shape.ToString(),
          "); move tensors to one device first"));
    }
  }
  if (absl::Status s = CheckBindings(*trace, bindings); !s.ok()) return s;
  if (absl::Status s = CheckShapes(*trace, bindings); !s.ok()) return s;

  std::shared_ptr<Executor> executor = FindExecutor(device.type);
  if (executor == nullptr) return NoExecutor(device);
  absl::StatusOr<std::vector<TensorData>> results = executor->Run(*trace, bindings);
  if (!results.ok()) return results.status();
  if (results->size() != trace->outputs().size()) {
    return absl::InternalError(absl::StrCat("executor returned ", results->size(),
                                            " values for ", trace->outputs().size(),
                                            " outputs"));
  }
  for (size_t i = 0; i < results->size(); ++i) {
    Node* node = trace->outputs()[i];
    TensorData& data = (*results)[i];
    node->shape = Shape::FromExtents(data.sizes);
    node->data = std::move(data);
    node->op = OpKind::kLeaf;
    node->attrs = NoAttrs{};
    node->inputs.clear();
  }
  return absl::OkStatus();
}

}  // namespace kiln
