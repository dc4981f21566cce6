// Configuration of the CUDA runtime, passed in structs. The environment is
// read only by the FromEnvironment() factories here (in options.cc), which a
// program calls once at its edge.
#ifndef KILN_JIT_OPTIONS_H_
#define KILN_JIT_OPTIONS_H_

#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace kiln::jit {

// Where the dlopen'ed libraries come from. An empty path means "search the
// usual names" (see driver_api.cc and nvrtc_api.cc).
struct LibraryOptions {
  std::string cuda_library;   // KILN_CUDA_LIBRARY, e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.1
  std::string nvrtc_library;  // KILN_NVRTC_LIBRARY, e.g. /opt/cuda/lib64/libnvrtc.so.12

  static LibraryOptions FromEnvironment();
};

// The kernel cache (jit/kernel_cache.h): always in memory, and on disk when
// `disk` is set and `directory` is not empty.
struct CacheOptions {
  bool disk = true;
  std::string directory;
  // fsync each entry before renaming it into place. Off by default: a lost
  // entry after a power cut only costs a recompile, and a torn one is caught
  // by its checksum.
  bool fsync = false;
  // Receives non-fatal problems (an unwritable directory, a corrupt entry).
  // Empty: they are printed to stderr, once per KernelCache and kind.
  std::function<void(absl::string_view)> warn;

  // KILN_CACHE_DIR moves the directory (default $HOME/.cache/kiln; no disk
  // cache when HOME is unset); KILN_CACHE=0 (or "off", "false", "no")
  // disables the disk part.
  static CacheOptions FromEnvironment();
};

}  // namespace kiln::jit

#endif  // KILN_JIT_OPTIONS_H_
