#include "jit/cuda_event.h"

#include <utility>

#include "jit/cuda_status.h"

namespace kiln::jit {

absl::StatusOr<CudaEvent> CudaEvent::Create(std::shared_ptr<PrimaryContext> context,
                                            CUstream stream) {
  KILN_JIT_RETURN_IF_ERROR(context->MakeCurrent());
  CUevent event = nullptr;
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(context->driver(), cuEventCreate(&event, kEventDefault)));
  return CudaEvent(std::move(context), stream, event);
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept
    : context_(std::move(other.context_)),
      stream_(std::exchange(other.stream_, nullptr)),
      event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    Destroy();
    context_ = std::move(other.context_);
    stream_ = std::exchange(other.stream_, nullptr);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

CudaEvent::~CudaEvent() { Destroy(); }

void CudaEvent::Destroy() {
  if (event_ == nullptr) return;
  if (context_->MakeCurrent().ok()) {
    KILN_CU(context_->driver(), cuEventDestroy(event_)).IgnoreError();
  }
  event_ = nullptr;
}

absl::Status CudaEvent::Record() {
  KILN_JIT_RETURN_IF_ERROR(context_->MakeCurrent());
  return KILN_CU(context_->driver(), cuEventRecord(event_, stream_));
}

absl::Status CudaEvent::Synchronize() {
  KILN_JIT_RETURN_IF_ERROR(context_->MakeCurrent());
  return KILN_CU(context_->driver(), cuEventSynchronize(event_));
}

absl::StatusOr<float> CudaEvent::ElapsedMilliseconds(const CudaEvent& start,
                                                     const CudaEvent& end) {
  const DriverApi& driver = end.context_->driver();
  KILN_JIT_RETURN_IF_ERROR(end.context_->MakeCurrent());
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver, cuEventSynchronize(end.event_)));
  float milliseconds = 0;
  KILN_JIT_RETURN_IF_ERROR(
      KILN_CU(driver, cuEventElapsedTime(&milliseconds, start.event_, end.event_)));
  return milliseconds;
}

}  // namespace kiln::jit
