#include "ops/cpu/cpu_executor.h"

#include <chrono>
#include <exception>
#include <new>

#include "absl/strings/str_cat.h"
#include "ops/cpu/kernels.h"
#include "tensor/convert.h"
#include "tensor/check.h"

namespace kiln::cpu {
namespace {

absl::StatusOr<TensorData> RunNode(const Node& node, const Types& types, Inputs inputs,
                                   const Extents& sizes, const Bindings& bindings,
                                   bool overwrite_dst) {
  const OpKind op = node.op;
  if (IsElementwise(op)) return RunElementwise(node, types, inputs, sizes);
  if (IsReduce(op)) return RunReduce(node, types, *inputs[0], sizes);
  if (IsView(op)) return RunView(node, types, *inputs[0], sizes, bindings);
  switch (op) {
    case OpKind::kConstant:
    case OpKind::kIota:
    case OpKind::kRandom:
      return RunSource(node, types, sizes, bindings);
    case OpKind::kMatmul:
      return RunMatmul(node, types, *inputs[0], *inputs[1], sizes);
    case OpKind::kDequantize:
      return RunDequantize(node, types, *inputs[0], sizes);
    case OpKind::kContiguous:
    case OpKind::kConcat:
    case OpKind::kIndexSelect:
    case OpKind::kSliceUpdate:
      return RunMovement(node, types, inputs, sizes, bindings, overwrite_dst);
    default:
      return absl::InternalError(
          absl::StrCat("CPU executor: no kernel for op ", OpName(op)));
  }
}

// 16-bit floats that no one outside the run sees are kept in f32.
DType Widened(DType dtype) {
  return dtype == DType::kF16 || dtype == DType::kBF16 ? DType::kF32 : dtype;
}

// Data movement copies elements: its data inputs must share the output's
// storage dtype.
bool MovesData(const Node& node, size_t input) {
  switch (node.op) {
    case OpKind::kContiguous:
    case OpKind::kConcat:
    case OpKind::kSliceUpdate:
      return true;
    case OpKind::kIndexSelect:
      return input == 0;
    default:
      return false;
  }
}

absl::StatusOr<TensorData> Converted(const TensorData& data, DType from, DType to) {
  absl::StatusOr<TensorData> out = AllocateHostTensor(to, data.sizes);
  if (!out.ok()) return out.status();
  std::vector<char> dense(static_cast<size_t>(data.num_elements()) * DTypeSize(from));
  CopyStridedToDense(data, DTypeSize(from), dense.data());
  ConvertElements(from, dense.data(), to, out->storage->data(), data.num_elements());
  return out;
}

}  // namespace

absl::StatusOr<std::vector<TensorData>> CpuExecutor::Run(const Trace& trace,
                                                         const Bindings& bindings) {
  const std::vector<Node*>& nodes = trace.nodes();
  const int n = static_cast<int>(nodes.size());
  // Values computed here; leaves are read from their nodes, without taking a
  // reference, so that in-place updates can tell whether anyone else holds
  // the storage.
  std::vector<TensorData> values(n);
  std::vector<int> uses(n, 0);
  std::vector<bool> is_output(n, false);
  for (const Node* node : nodes) {
    if (node->is_realized()) continue;
    for (const auto& input : node->inputs) ++uses[trace.IndexOf(input.get())];
  }
  for (const Node* out : trace.outputs()) is_output[trace.IndexOf(out)] = true;
  // How each value is stored: results the caller sees (and leaves) in their
  // own dtype, 16-bit intermediates in f32, views as what they view.
  std::vector<DType> storage(n);
  for (int i = 0; i < n; ++i) {
    const Node& node = *nodes[i];
    if (node.is_realized()) {
      storage[i] = node.dtype;
    } else if (IsView(node.op)) {
      storage[i] = storage[trace.IndexOf(node.inputs[0].get())];
    } else {
      storage[i] = is_output[i] ? node.dtype : Widened(node.dtype);
    }
  }

  using Clock = std::chrono::steady_clock;
  const Clock::time_point run_start = profile_enabled_ ? Clock::now() : Clock::time_point();
  const auto value_of = [&](int i) -> const TensorData& {
    return nodes[i]->is_realized() ? nodes[i]->data : values[i];
  };
  try {
    std::vector<const TensorData*> inputs;
    std::vector<int> input_index;
    std::vector<TensorData> converted;
    for (int i = 0; i < n; ++i) {
      const Node& node = *nodes[i];
      if (node.is_realized()) continue;
      inputs.clear();
      input_index.clear();
      converted.clear();
      converted.reserve(node.inputs.size());
      Types types;
      types.out = storage[i];
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const int j = trace.IndexOf(node.inputs[k].get());
        input_index.push_back(j);
        inputs.push_back(&value_of(j));
        types.in.push_back(storage[j]);
        if (MovesData(node, k) && storage[j] != storage[i]) {
          absl::StatusOr<TensorData> c = Converted(value_of(j), storage[j], storage[i]);
          if (!c.ok()) return c.status();
          converted.push_back(*std::move(c));
          inputs.back() = &converted.back();
          types.in.back() = storage[i];
        }
      }
      absl::StatusOr<Extents> sizes = node.shape.Evaluate(bindings);
      if (!sizes.ok()) return sizes.status();

      bool overwrite_dst = false;
      if (node.op == OpKind::kSliceUpdate) {
        const int d = input_index[0];
        const Node& dst = *nodes[d];
        const TensorData& data = value_of(d);
        const bool last_use = uses[d] == 1 && !is_output[d];
        // A leaf is ours alone when only this node holds it and no other
        // value shares its storage; a computed value when this is its last
        // use and no live view shares it.
        const bool unshared = dst.is_realized()
                                  ? node.inputs[0].use_count() == 1 &&
                                        data.storage.use_count() == 1
                                  : data.storage.use_count() == 1;
        // Only a dense value can be written in place: a broadcast view (stride
        // 0) would alias its own elements.
        overwrite_dst = last_use && unshared && data.storage->writable() && data.is_contiguous() &&
                        storage[d] == storage[i];
      }
      const Clock::time_point op_start = profile_enabled_ ? Clock::now() : Clock::time_point();
      absl::StatusOr<TensorData> result =
          RunNode(node, types, inputs, *sizes, bindings, overwrite_dst);
      if (!result.ok()) return result.status();
      if (profile_enabled_) {
        CpuProfile::Entry& entry = profile_.by_op[static_cast<int>(node.op)];
        ++entry.count;
        entry.seconds += std::chrono::duration<double>(Clock::now() - op_start).count();
      }
      KILN_CHECK(result->sizes == *sizes, "CPU kernel produced the wrong sizes");
      values[i] = *std::move(result);
      for (int j : input_index) {
        if (--uses[j] == 0 && !is_output[j]) values[j] = TensorData{};
      }
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("CPU executor: out of host memory");
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CPU executor: ", e.what()));
  }
  std::vector<TensorData> results;
  for (const Node* out : trace.outputs()) {
    const int i = trace.IndexOf(out);
    if (storage[i] == out->dtype) {
      results.push_back(value_of(i));
      continue;
    }
    // A view of a widened intermediate: the caller gets its own dtype.
    absl::StatusOr<TensorData> c = Converted(value_of(i), storage[i], out->dtype);
    if (!c.ok()) return c.status();
    results.push_back(*std::move(c));
  }
  if (profile_enabled_) {
    profile_.total_seconds += std::chrono::duration<double>(Clock::now() - run_start).count();
  }
  return results;
}

absl::Status CpuExecutor::CopyToHost(const TensorData& data, DType dtype, void* dst) {
  CopyStridedToDense(data, DTypeSize(dtype), dst);
  return absl::OkStatus();
}

absl::StatusOr<TensorData> CpuExecutor::CopyFromHost(const TensorData& host, DType dtype) {
  absl::StatusOr<TensorData> out = AllocateHostTensor(dtype, host.sizes);
  if (!out.ok()) return out.status();
  CopyView(host, *out, DTypeSize(dtype));
  return out;
}

void EnsureCpuExecutorRegistered() {
  static const bool registered = [] {
    RegisterExecutor(DeviceType::kCpu, std::make_shared<CpuExecutor>());
    return true;
  }();
  (void)registered;
}

}  // namespace kiln::cpu
