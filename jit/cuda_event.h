// CUDA events on a context's stream, for timing kernels (the bench).
#ifndef KILN_JIT_CUDA_EVENT_H_
#define KILN_JIT_CUDA_EVENT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "jit/cuda_types.h"
#include "jit/primary_context.h"

namespace kiln::jit {

// Created by CudaContext::CreateEvent; must not outlive that CudaContext
// (it records on the context's stream).
class CudaEvent {
 public:
  static absl::StatusOr<CudaEvent> Create(std::shared_ptr<PrimaryContext> context,
                                          CUstream stream);
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  ~CudaEvent();

  // Records the event after the work queued so far on the stream.
  absl::Status Record();
  // Waits until the recorded work has run.
  absl::Status Synchronize();
  // Milliseconds of GPU time between two recorded events; waits for `end`.
  static absl::StatusOr<float> ElapsedMilliseconds(const CudaEvent& start, const CudaEvent& end);

  CUevent handle() const { return event_; }

 private:
  CudaEvent(std::shared_ptr<PrimaryContext> context, CUstream stream, CUevent event)
      : context_(std::move(context)), stream_(stream), event_(event) {}
  void Destroy();

  std::shared_ptr<PrimaryContext> context_;
  CUstream stream_ = nullptr;
  CUevent event_ = nullptr;
};

}  // namespace kiln::jit

#endif  // KILN_JIT_CUDA_EVENT_H_
