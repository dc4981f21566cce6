#include "jit/cuda_module.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jit/cuda_status.h"

namespace kiln::jit {

absl::StatusOr<std::unique_ptr<CudaModule>> CudaModule::Load(
    std::shared_ptr<PrimaryContext> context, absl::string_view cubin) {
  if (cubin.empty()) return absl::InvalidArgumentError("cannot load an empty CUBIN");
  // The driver reads the image as an ELF file in place; give it the natural
  // alignment a file buffer (say, a slice of a cache entry) may lack.
  std::vector<uint64_t> aligned;
  const void* image = cubin.data();
  if (reinterpret_cast<uintptr_t>(image) % alignof(uint64_t) != 0) {
    aligned.resize((cubin.size() + 7) / 8);
    std::memcpy(aligned.data(), cubin.data(), cubin.size());
    image = aligned.data();
  }
  const DriverApi& driver = context->driver();
  KILN_JIT_RETURN_IF_ERROR(context->MakeCurrent());
  CUmodule module = nullptr;
  KILN_JIT_RETURN_IF_ERROR(Annotate(KILN_CU(driver, cuModuleLoadData(&module, image)),
                                    absl::StrCat("loading a ", cubin.size(), "-byte CUBIN")));
  return std::unique_ptr<CudaModule>(new CudaModule(std::move(context), module));
}

CudaModule::~CudaModule() {
  if (context_->MakeCurrent().ok()) {
    KILN_CU(context_->driver(), cuModuleUnload(module_)).IgnoreError();
  }
}

absl::StatusOr<CudaFunction*> CudaModule::GetFunction(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  if (auto it = functions_.find(name); it != functions_.end()) return it->second.get();
  const DriverApi& driver = context_->driver();
  KILN_JIT_RETURN_IF_ERROR(context_->MakeCurrent());
  const std::string key(name);
  CUfunction handle = nullptr;
  KILN_JIT_RETURN_IF_ERROR(Annotate(
      KILN_CU(driver, cuModuleGetFunction(&handle, module_, key.c_str())),
      absl::StrCat("kernel '", name, "'")));
  auto function = std::unique_ptr<CudaFunction>(new CudaFunction(key, handle));
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(
      driver, cuFuncGetAttribute(&function->static_shared_bytes_, kFuncAttrSharedSizeBytes, handle)));
  KILN_JIT_RETURN_IF_ERROR(
      KILN_CU(driver, cuFuncGetAttribute(&function->num_registers_, kFuncAttrNumRegs, handle)));
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(driver, cuFuncGetAttribute(&function->max_threads_per_block_,
                                                             kFuncAttrMaxThreadsPerBlock, handle)));
  int dynamic_limit = 0;
  KILN_JIT_RETURN_IF_ERROR(KILN_CU(
      driver, cuFuncGetAttribute(&dynamic_limit, kFuncAttrMaxDynamicSharedSizeBytes, handle)));
  function->dynamic_shared_limit_.store(dynamic_limit, std::memory_order_relaxed);
  CudaFunction* out = function.get();
  functions_.emplace(key, std::move(function));
  return out;
}

}  // namespace kiln::jit
