// The safetensors header parser on arbitrary bytes (a whole file's bytes):
// on success every entry must lie inside the data and match its shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "models/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<kiln::models::SafetensorsHeader> header =
      kiln::models::ParseSafetensorsHeader(bytes, "fuzz.safetensors");
  if (!header.ok()) return 0;
  if (header->data_start > size) std::abort();
  for (const auto& [name, e] : header->entries) {
    if (e.begin > e.end || e.end > size - header->data_start) std::abort();
  }
  return 0;
}
