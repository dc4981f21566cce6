// kiln declares the few driver types it passes by address itself
// (jit/cuda_types.h, no CUDA header needed): where the toolkit's headers are
// present, their layout and values are checked against cuda.h's.
#include <cstddef>

#include "gtest/gtest.h"
#include "jit/cuda_types.h"

#ifdef KILN_HAVE_CUDA_HEADERS
#include <cuda.h>
#endif

namespace kiln::jit {
namespace {

TEST(CudaTypes, LaunchConfigAndAttributesLieAsCudaHDeclaresThem) {
#ifndef KILN_HAVE_CUDA_HEADERS
  GTEST_SKIP() << "built without the CUDA toolkit's headers";
#else
  static_assert(sizeof(CUlaunchAttribute) == sizeof(::CUlaunchAttribute));
  static_assert(alignof(CUlaunchAttribute) == alignof(::CUlaunchAttribute));
  static_assert(offsetof(CUlaunchAttribute, value) == offsetof(::CUlaunchAttribute, value));
  static_assert(sizeof(CUlaunchConfig) == sizeof(::CUlaunchConfig));
  static_assert(offsetof(CUlaunchConfig, shared_bytes) == offsetof(::CUlaunchConfig, sharedMemBytes));
  static_assert(offsetof(CUlaunchConfig, stream) == offsetof(::CUlaunchConfig, hStream));
  static_assert(offsetof(CUlaunchConfig, attrs) == offsetof(::CUlaunchConfig, attrs));
  static_assert(offsetof(CUlaunchConfig, num_attrs) == offsetof(::CUlaunchConfig, numAttrs));
  EXPECT_EQ(kLaunchAttrCooperative, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  EXPECT_EQ(kLaunchAttrProgrammaticStreamSerialization, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
  // The value kiln sets is the union's first int, as cuda.h's members are.
  ::CUlaunchAttribute theirs{};
  EXPECT_EQ(static_cast<void*>(&theirs.value.programmaticStreamSerializationAllowed),
            static_cast<void*>(&theirs.value.cooperative));
#endif
}

}  // namespace
}  // namespace kiln::jit
