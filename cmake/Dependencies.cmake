# One place that finds every third-party dependency and exposes it as a target.
find_package(Threads REQUIRED)
find_package(absl REQUIRED)
find_package(xtl REQUIRED)
find_package(xtensor REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

# Debian's libz3-dev ships a pkg-config file but no CMake package.
find_package(PkgConfig REQUIRED)
pkg_check_modules(Z3 REQUIRED IMPORTED_TARGET z3)
add_library(kiln::z3 ALIAS PkgConfig::Z3)

# Tokenizers: PCRE2 for tokenizer.json's Unicode regexes, utf8proc for its
# normalizers, libsentencepiece for tokenizer.model (Debian ships pkg-config
# files for all three).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)

# Only the CUDA headers are used at build time: libcuda and libnvrtc are opened
# with dlopen at run time, so binaries start on machines without a GPU.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  set(KILN_HAVE_CUDA_HEADERS ON)
  message(STATUS "kiln: CUDA toolkit ${CUDAToolkit_VERSION} headers at ${CUDAToolkit_INCLUDE_DIRS}: GPU support on")
else()
  set(KILN_HAVE_CUDA_HEADERS OFF)
  message(STATUS "kiln: no CUDA toolkit found: building with GPU support off (CPU executor only)")
endif()

if(KILN_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
