// File operations of the kernel cache directory: whole-file reads, and
// atomic writes that two processes may do at once.
#ifndef KILN_JIT_CACHE_FILE_H_
#define KILN_JIT_CACHE_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::jit {

// The whole file. NotFound when it does not exist; FailedPrecondition when it
// is larger than `max_bytes`; otherwise errors name the path and strerror.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes);

// Creates `path` and its missing parents (mkdir -p, mode 0755).
absl::Status CreateDirectories(const std::string& path);

// Replaces `path` with `contents` atomically: writes a temporary file in the
// same directory, named uniquely by process id and a counter, optionally
// fsyncs it, then renames it over `path`. Readers see the old file or the
// whole new one, never a part; of two concurrent writers, the last rename
// wins and both succeed. The temporary file is removed on failure.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents, bool fsync);

}  // namespace kiln::jit

#endif  // KILN_JIT_CACHE_FILE_H_
