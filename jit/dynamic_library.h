// A shared library opened with dlopen at run time. Libraries are never
// closed: the CUDA driver in particular must not be unloaded while any
// handle it issued may still be used, and process exit reclaims it anyway.
#ifndef KILN_JIT_DYNAMIC_LIBRARY_H_
#define KILN_JIT_DYNAMIC_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::jit {

class DynamicLibrary {
 public:
  // Opens the first of `candidates` (names searched by the dynamic loader, or
  // paths) that loads. Otherwise Unavailable: "tried NAME (dlerror); ...".
  static absl::StatusOr<DynamicLibrary> OpenFirst(const std::vector<std::string>& candidates);

  // The address of `name`, or nullptr when the library lacks it.
  void* Symbol(const char* name) const;

  // Binds a function pointer; false when the symbol is missing.
  template <typename Fn>
  bool Bind(const char* name, Fn*& out) const {
    out = reinterpret_cast<Fn*>(Symbol(name));
    return out != nullptr;
  }

  // The candidate that loaded.
  const std::string& name() const { return name_; }

 private:
  DynamicLibrary(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  void* handle_;
  std::string name_;
};

}  // namespace kiln::jit

#endif  // KILN_JIT_DYNAMIC_LIBRARY_H_
