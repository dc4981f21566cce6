// The device tile library, embedded in the binary as text at build time (see
// cmake/EmbedFiles.cmake) and handed to NVRTC as headers.
#ifndef KILN_OPTIMIZER_TILES_EMBEDDED_H_
#define KILN_OPTIMIZER_TILES_EMBEDDED_H_

#include <string>
#include <vector>

namespace kiln::tiles {

struct EmbeddedFile {
  const char* name;  // the include name, e.g. "kiln/tiles.cuh"
  const char* text;
};

const std::vector<EmbeddedFile>& EmbeddedFiles();

}  // namespace kiln::tiles

#endif  // KILN_OPTIMIZER_TILES_EMBEDDED_H_
