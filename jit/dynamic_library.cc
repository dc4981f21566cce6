#include "jit/dynamic_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace kiln::jit {

absl::StatusOr<DynamicLibrary> DynamicLibrary::OpenFirst(
    const std::vector<std::string>& candidates) {
  std::vector<std::string> failures;
  for (const std::string& candidate : candidates) {
    // RTLD_LOCAL keeps the library's symbols out of the global namespace, so
    // loading it cannot change which symbols other libraries resolve to.
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return DynamicLibrary(handle, candidate);
    const char* raw = ::dlerror();
    absl::string_view error = raw != nullptr ? raw : "unknown error";
    // dlerror() usually repeats the name: "libcuda.so.1: cannot open ...".
    absl::ConsumePrefix(&error, absl::StrCat(candidate, ": "));
    failures.push_back(absl::StrCat(candidate, " (", error, ")"));
  }
  if (failures.empty()) return absl::UnavailableError("no library names to try");
  return absl::UnavailableError(absl::StrCat("tried ", absl::StrJoin(failures, "; ")));
}

void* DynamicLibrary::Symbol(const char* name) const { return ::dlsym(handle_, name); }

}  // namespace kiln::jit
