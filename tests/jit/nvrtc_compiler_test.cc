// NVRTC needs no GPU: these run wherever the CUDA toolkit is installed (CI
// included). Without the toolkit (kiln built with GPU support off) they skip.
#include "jit/nvrtc_compiler.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_cache.h"
#include "jit/nvrtc_api.h"

namespace kiln::jit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Inline PTX the generated code relies on: an f32 -> f16 conversion and a
// tensor-core mma (sm_80+), compiled for Hopper.
constexpr absl::string_view kPtxKernel = R"(
extern "C" __global__ void convert_and_mma(const float* in, unsigned short* half_out,
                                           const unsigned* a, const unsigned* b, float* d) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(in[threadIdx.x]));
  half_out[threadIdx.x] = h;
  const unsigned* ta = a + 4 * threadIdx.x;
  const unsigned* tb = b + 2 * threadIdx.x;
  float d0, d1, d2, d3;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
      : "r"(ta[0]), "r"(ta[1]), "r"(ta[2]), "r"(ta[3]), "r"(tb[0]), "r"(tb[1]),
        "f"(0.0f), "f"(0.0f), "f"(0.0f), "f"(0.0f));
  float* td = d + 4 * threadIdx.x;
  td[0] = d0; td[1] = d1; td[2] = d2; td[3] = d3;
}
)";

const NvrtcApi* NvrtcOrNull() {
  absl::StatusOr<const NvrtcApi*> nvrtc = LoadNvrtc();
  return nvrtc.ok() ? *nvrtc : nullptr;
}

#define KILN_REQUIRE_NVRTC(nvrtc)                                                          \
  const NvrtcApi* nvrtc = NvrtcOrNull();                                                   \
  if (nvrtc == nullptr) {                                                                  \
    if (kToolkitExpected) FAIL() << "NVRTC should load here: " << LoadNvrtc().status();    \
    GTEST_SKIP() << "built without the CUDA toolkit: " << LoadNvrtc().status();            \
  }

#ifdef KILN_HAVE_CUDA_HEADERS
constexpr bool kToolkitExpected = true;
#else
constexpr bool kToolkitExpected = false;
#endif

TEST(NvrtcCompiler, LoadsAndReportsItsVersion) {
  KILN_REQUIRE_NVRTC(nvrtc);
  EXPECT_GE(nvrtc->version_major, 12);
  EXPECT_FALSE(nvrtc->library.empty());
  EXPECT_EQ(NvrtcVersionString(*nvrtc),
            absl::StrCat(nvrtc->version_major, ".", nvrtc->version_minor));
  // Loading again gives the same table.
  EXPECT_EQ(*LoadNvrtc(), nvrtc);
}

TEST(NvrtcCompiler, CompilesInlinePtxAndMmaForHopper) {
  KILN_REQUIRE_NVRTC(nvrtc);
  CompileOptions options;
  options.arch = "sm_90a";
  absl::StatusOr<std::string> cubin = CompileToCubin(*nvrtc, kPtxKernel, options);
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  ASSERT_GT(cubin->size(), 4u);
  EXPECT_EQ(cubin->substr(0, 4), "\x7f" "ELF");  // a CUBIN is an ELF image
}

TEST(NvrtcCompiler, CompilesForOtherArchitectures) {
  KILN_REQUIRE_NVRTC(nvrtc);
  for (const char* arch : {"sm_80", "sm_89"}) {
    CompileOptions options;
    options.arch = arch;
    absl::StatusOr<std::string> cubin = CompileToCubin(*nvrtc, kPtxKernel, options);
    ASSERT_TRUE(cubin.ok()) << arch << ": " << cubin.status();
    EXPECT_FALSE(cubin->empty());
  }
}

TEST(NvrtcCompiler, SyntaxErrorReturnsTheProgramLog) {
  KILN_REQUIRE_NVRTC(nvrtc);
  constexpr absl::string_view kBroken =
      "extern \"C\" __global__ void broken(float* x) {\n"
      "  x[0] = 1.0f\n"
      "}\n";
  absl::StatusOr<std::string> cubin = CompileToCubin(*nvrtc, kBroken, CompileOptions(), "broken.cu");
  ASSERT_FALSE(cubin.ok());
  EXPECT_EQ(cubin.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(cubin.status().message());
  EXPECT_THAT(message, HasSubstr("nvrtcCompileProgram(broken.cu, --gpu-architecture=sm_90a"));
  EXPECT_THAT(message, HasSubstr("NVRTC_ERROR_COMPILATION"));
  EXPECT_THAT(message, HasSubstr("program log:"));
  // The log line itself: file, line and what is wrong.
  EXPECT_THAT(message, HasSubstr("broken.cu(3): error"));
  EXPECT_THAT(message, HasSubstr("expected a \";\""));
}

TEST(NvrtcCompiler, SourceWithoutKernelsCompiles) {
  // A source without kernels still compiles (to an empty module): callers
  // find missing kernels at GetFunction, not here.
  KILN_REQUIRE_NVRTC(nvrtc);
  absl::StatusOr<std::string> cubin =
      CompileToCubin(*nvrtc, "__device__ int helper() { return 1; }\n", CompileOptions());
  ASSERT_TRUE(cubin.ok()) << cubin.status();
}

TEST(NvrtcCompiler, RejectsArchitecturesThatCannotMakeACubin) {
  KILN_REQUIRE_NVRTC(nvrtc);
  for (const char* arch : {"compute_90", "sm_", "sm_x0", "90", "", "sm_90ab"}) {
    CompileOptions options;
    options.arch = arch;
    absl::StatusOr<std::string> cubin = CompileToCubin(*nvrtc, kPtxKernel, options);
    ASSERT_FALSE(cubin.ok()) << arch;
    EXPECT_EQ(cubin.status().code(), absl::StatusCode::kInvalidArgument) << arch;
    EXPECT_THAT(cubin.status().message(), HasSubstr("CompileOptions.arch")) << arch;
  }
}

TEST(NvrtcCompiler, UnknownArchitectureIsReportedByNvrtc) {
  KILN_REQUIRE_NVRTC(nvrtc);
  CompileOptions options;
  options.arch = "sm_1";  // well formed, but no such GPU
  absl::StatusOr<std::string> cubin = CompileToCubin(*nvrtc, kPtxKernel, options);
  ASSERT_FALSE(cubin.ok());
  EXPECT_EQ(cubin.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(cubin.status().message(), HasSubstr("--gpu-architecture=sm_1"));
}

TEST(NvrtcCompiler, FlagsComeFromOnePlace) {
  CompileOptions options;
  EXPECT_THAT(options.Flags(),
              ElementsAre("--gpu-architecture=sm_90a", "--std=c++17", "-default-device"));
  options.arch = "sm_80";
  options.fast_math = true;
  options.line_info = true;
  options.defines = {{"TILE", "64"}, {"KILN_DEBUG", ""}};
  options.include_paths = {"/opt/include"};
  EXPECT_THAT(options.Flags(),
              ElementsAre("--gpu-architecture=sm_80", "--std=c++17", "-default-device",
                          "--use_fast_math", "-lineinfo", "-DTILE=64", "-DKILN_DEBUG",
                          "-I/opt/include"));
}

TEST(NvrtcCompiler, DefinesReachTheSource) {
  KILN_REQUIRE_NVRTC(nvrtc);
  constexpr absl::string_view kSource =
      "static_assert(TILE == 64, \"TILE must be 64\");\n"
      "extern \"C\" __global__ void k(float* x) { x[0] = TILE; }\n";
  CompileOptions options;
  options.defines = {{"TILE", "64"}};
  EXPECT_TRUE(CompileToCubin(*nvrtc, kSource, options).ok());
  options.defines = {{"TILE", "32"}};
  absl::StatusOr<std::string> wrong = CompileToCubin(*nvrtc, kSource, options);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("TILE must be 64"));
}

TEST(NvrtcCompiler, LineInfoAndFastMathCompile) {
  KILN_REQUIRE_NVRTC(nvrtc);
  CompileOptions options;
  options.line_info = true;
  options.fast_math = true;
  absl::StatusOr<std::string> cubin = CompileToCubin(*nvrtc, kPtxKernel, options);
  ASSERT_TRUE(cubin.ok()) << cubin.status();
}

TEST(NvrtcCompiler, MissingLibraryIsUnavailable) {
  LibraryOptions libraries;
  libraries.nvrtc_library = "/nonexistent/libnvrtc.so.13";
  absl::StatusOr<const NvrtcApi*> nvrtc = LoadNvrtc(libraries);
  ASSERT_FALSE(nvrtc.ok());
  EXPECT_EQ(nvrtc.status().code(), absl::StatusCode::kUnavailable);
  const std::string message(nvrtc.status().message());
  EXPECT_THAT(message, HasSubstr("/nonexistent/libnvrtc.so.13"));
  EXPECT_THAT(message, HasSubstr("No such file or directory"));
  EXPECT_THAT(message, HasSubstr("CPU"));
  EXPECT_THAT(message, Not(HasSubstr("\n")));
}

TEST(NvrtcCompiler, LibraryWithoutNvrtcSymbolsIsUnavailable) {
  LibraryOptions libraries;
  libraries.nvrtc_library = "libm.so.6";  // loads, but is not NVRTC
  absl::StatusOr<const NvrtcApi*> nvrtc = LoadNvrtc(libraries);
  ASSERT_FALSE(nvrtc.ok());
  EXPECT_EQ(nvrtc.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(nvrtc.status().message(), HasSubstr("lacks nvrtcVersion"));
}

TEST(NvrtcCompiler, KernelCacheCompilesOnceThenReadsTheDisk) {
  KILN_REQUIRE_NVRTC(nvrtc);
  std::string pattern = ::testing::TempDir() + "kiln_nvrtc_cache_XXXXXX";
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  CacheOptions options;
  options.directory = pattern;
  std::string cubin;
  {
    std::unique_ptr<KernelCache> cache = KernelCache::WithNvrtc(options, *nvrtc, 0);
    absl::StatusOr<CachedKernel> kernel = cache->GetOrCompile(kPtxKernel, CompileOptions());
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    cubin = *kernel->cubin;
    EXPECT_EQ(cache->stats().compiles, 1);
    EXPECT_EQ(cache->stats().disk_writes, 1);
  }
  std::unique_ptr<KernelCache> cache = KernelCache::WithNvrtc(options, *nvrtc, 0);
  absl::StatusOr<CachedKernel> kernel = cache->GetOrCompile(kPtxKernel, CompileOptions());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ(*kernel->cubin, cubin);
  EXPECT_EQ(cache->stats().compiles, 0);
  EXPECT_EQ(cache->stats().disk_hits, 1);
  // A source error is the compile's error, not the cache's.
  absl::StatusOr<CachedKernel> broken = cache->GetOrCompile("this is not C++", CompileOptions());
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr("program log"));
  std::filesystem::remove_all(pattern);
}

}  // namespace
}  // namespace kiln::jit
