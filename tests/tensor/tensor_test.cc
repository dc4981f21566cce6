#include "tensor/tensor.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "tests/test_util.h"

namespace kiln {
namespace {

using testing::Bits;
using ::testing::ElementsAre;
using testing::F32;
using ::testing::HasSubstr;
using testing::I32;
using testing::Message;
using testing::ReadF32;
using testing::ValueOrFail;

// ---- Creating realized tensors

TEST(Tensor, FromHostF32) {
  const std::vector<float> values = {1.5f, -2.0f, 0.0f, 3.25f, 1e30f, -0.0f};
  Tensor t = Tensor::FromHost<float>(values, {2, 3});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t.defined());
  EXPECT_TRUE(t.is_realized());
  EXPECT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.device(), Device::Cpu());
  EXPECT_TRUE(t.shape() == Shape({2, 3}));
  EXPECT_EQ(t.rank(), 2);
  absl::StatusOr<std::vector<float>> back = t.to_host<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, values);
}

TEST(Tensor, FromHostCopiesTheValues) {
  std::vector<float> values = {1, 2, 3};
  Tensor t = Tensor::FromHost<float>(values, {3});
  values[0] = 100;
  EXPECT_THAT(ReadF32(t), ElementsAre(1, 2, 3));
}

TEST(Tensor, FromHostEveryDTypeRoundTrips) {
  const std::vector<Half> halves = {Half{0x3c00}, Half{0x7bff}, Half{0x8001}, Half{0xfc00}};
  EXPECT_THAT(Bits(ValueOrFail(Tensor::FromHost<Half>(halves, {4}).to_host<Half>())),
              ElementsAre(0x3c00, 0x7bff, 0x8001, 0xfc00));
  const std::vector<BFloat16> bf = {BFloat16{0x3f80}, BFloat16{0xff80}, BFloat16{0x0001}};
  EXPECT_THAT(Bits(ValueOrFail(Tensor::FromHost<BFloat16>(bf, {3}).to_host<BFloat16>())),
              ElementsAre(0x3f80, 0xff80, 0x0001));
  const std::vector<int32_t> i32 = {std::numeric_limits<int32_t>::min(), -1, 0,
                                    std::numeric_limits<int32_t>::max()};
  EXPECT_EQ(ValueOrFail(Tensor::FromHost<int32_t>(i32, {2, 2}).to_host<int32_t>()), i32);
  const std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max(), 7};
  EXPECT_EQ(ValueOrFail(Tensor::FromHost<int64_t>(i64, {3}).to_host<int64_t>()), i64);
  const std::vector<uint8_t> u8 = {0, 1, 128, 255};
  EXPECT_EQ(ValueOrFail(Tensor::FromHost<uint8_t>(u8, {1, 4}).to_host<uint8_t>()), u8);

  // std::vector<bool> has no data(), so to_host<bool> cannot be used; read
  // bools through CopyToHost and item<bool>, and as u8 (a lossless widening).
  const std::array<bool, 3> bools = {true, false, true};
  Tensor b = Tensor::FromHost<bool>(bools, {3});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b.dtype(), DType::kBool);
  bool out[3] = {false, true, false};
  KILN_EXPECT_OK(b.CopyToHost(DType::kBool, out, 3, {}));
  EXPECT_TRUE(out[0]);
  EXPECT_FALSE(out[1]);
  EXPECT_TRUE(out[2]);
  EXPECT_THAT(ValueOrFail(b.to_host<uint8_t>()), ElementsAre(1, 0, 1));
}

TEST(Tensor, FromHostScalar) {
  const float v = 2.5f;
  Tensor t = Tensor::FromHost<float>(absl::MakeConstSpan(&v, 1), {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(ValueOrFail(t.item<float>()), 2.5f);
}

TEST(Tensor, FromHostRank6) {
  std::vector<float> values(64);
  for (int i = 0; i < 64; ++i) values[i] = static_cast<float>(i);
  Tensor t = Tensor::FromHost<float>(values, {2, 2, 2, 2, 2, 2});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ReadF32(t), values);
}

TEST(Tensor, FromHostZeroElements) {
  Tensor t = Tensor::FromHostBytes(DType::kF32, {0, 3}, nullptr, 0);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t.shape() == Shape({0, 3}));
  absl::StatusOr<std::vector<float>> v = t.to_host<float>();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->empty());
}

TEST(Tensor, FromHostZeroElementsWithLargeDims) {
  // Zero elements in all, however large the other dims.
  Tensor t = Tensor::FromHostBytes(DType::kF32, {kMaxDimValue, kMaxDimValue, 0}, nullptr, 0);
  EXPECT_TRUE(t.ok()) << t.status();
}

TEST(Tensor, LazyZeroElementTensor) {
  absl::StatusOr<std::vector<float>> v = (zeros({0, 3}) + 1.0).to_host<float>();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->empty());
}

TEST(Tensor, FromVectorTakesOwnership) {
  Tensor t = Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, {3, 2});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t.dtype(), DType::kI64);
  EXPECT_TRUE(t.shape() == Shape({3, 2}));
  EXPECT_TRUE(t.node()->data.storage->writable());
  EXPECT_THAT(ValueOrFail(t.to_host<int64_t>()), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(Tensor, FromVectorWrongCountIsInvalidArgument) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3}, {2, 2});
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Tensor, WrapHostReadOnlyDoesNotCopyAndKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<int32_t>>(std::vector<int32_t>{1, 2, 3, 4});
  std::weak_ptr<std::vector<int32_t>> watch = owner;
  const int32_t* data = owner->data();
  Tensor t = Tensor::WrapHost(DType::kI32, {2, 2}, data, 4 * sizeof(int32_t), owner,
                              /*writable=*/false);
  owner.reset();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(t.node()->data.storage->data(), data);
  EXPECT_FALSE(t.node()->data.storage->writable());
  EXPECT_THAT(ValueOrFail(t.to_host<int32_t>()), ElementsAre(1, 2, 3, 4));
  t = Tensor();
  EXPECT_TRUE(watch.expired());
}

TEST(Tensor, WrapHostWritableSeesTheMemory) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2});
  float* data = owner->data();
  Tensor t = Tensor::WrapHost(DType::kF32, {2}, data, 2 * sizeof(float), owner, true);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t.node()->data.storage->writable());
  EXPECT_EQ(t.node()->data.storage->data(), data);
  data[1] = 7;  // no copy was made
  EXPECT_THAT(ReadF32(t), ElementsAre(1, 7));
}

TEST(Tensor, WrapHostMisalignedIsInvalidArgument) {
  alignas(16) static char buffer[32] = {};
  Tensor t = Tensor::WrapHost(DType::kF32, {2}, buffer + 1, 8, nullptr, false);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(t.status()), HasSubstr("WrapHost"));
  Tensor i64 = Tensor::WrapHost(DType::kI64, {1}, buffer + 4, 8, nullptr, false);
  EXPECT_EQ(i64.status().code(), absl::StatusCode::kInvalidArgument);
  // u8 needs no alignment.
  KILN_EXPECT_OK(Tensor::WrapHost(DType::kU8, {3}, buffer + 1, 3, nullptr, false).status());
}

TEST(Tensor, WrapHostErrors) {
  EXPECT_EQ(Tensor::WrapHost(DType::kF32, {2}, nullptr, 8, nullptr, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  alignas(8) static float data[4] = {};
  EXPECT_EQ(Tensor::WrapHost(DType::kF32, {2}, data, 12, nullptr, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::WrapHost(DType::kF32, {-2}, data, 0, nullptr, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Tensor::WrapHost(DType::kF32, {1, 1, 1, 1, 1, 1, 1}, data, 4, nullptr, true).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// ---- FromHostBytes errors

TEST(Tensor, FromHostWrongByteCountIsInvalidArgument) {
  const float data[6] = {};
  Tensor t = Tensor::FromHostBytes(DType::kF32, {2, 3}, data, 20);
  EXPECT_FALSE(t.ok());
  EXPECT_FALSE(t.is_realized());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(t.status()), HasSubstr("FromHost"));
  EXPECT_THAT(Message(t.status()), HasSubstr("24"));
  EXPECT_THAT(Message(t.status()), HasSubstr("20"));
  EXPECT_EQ(Tensor::FromHostBytes(DType::kF32, {2, 3}, data, 28).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::FromHostBytes(DType::kF16, {2, 3}, data, 24).status().code(),
            absl::StatusCode::kInvalidArgument);  // f16 needs 12
  const std::vector<float> three = {1, 2, 3};
  EXPECT_EQ(Tensor::FromHost<float>(three, {2, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::FromHost<float>(three, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Tensor, FromHostNegativeSizeIsInvalidArgument) {
  const float data[4] = {};
  for (std::vector<int64_t> sizes :
       {std::vector<int64_t>{-1}, std::vector<int64_t>{2, -3}, std::vector<int64_t>{-2, -2}}) {
    Tensor t = Tensor::FromHostBytes(DType::kF32, sizes, data, 16);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
    EXPECT_THAT(Message(t.status()), HasSubstr("FromHost"));
  }
}

TEST(Tensor, FromHostRank7IsInvalidArgument) {
  const float data[1] = {};
  Tensor t = Tensor::FromHostBytes(DType::kF32, {1, 1, 1, 1, 1, 1, 1}, data, 4);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(t.status()), HasSubstr("rank"));
}

TEST(Tensor, FromHostNullDataIsInvalidArgument) {
  Tensor t = Tensor::FromHostBytes(DType::kF32, {2}, nullptr, 8);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(t.status()), HasSubstr("null"));
}

TEST(Tensor, FromHostHugeSizesAreInvalidArgumentNotAnAllocation) {
  const float data[1] = {};
  EXPECT_EQ(Tensor::FromHostBytes(DType::kF32, {kMaxDimValue + 1}, data, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::FromHostBytes(DType::kF32, {int64_t{1} << 30, int64_t{1} << 30}, data, 4)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::FromHostBytes(DType::kF32, {std::numeric_limits<int64_t>::max()}, data, 4)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- Reading values

TEST(Tensor, ToHostWideningReadsAreAllowed) {
  Tensor f16 = Tensor::FromHost<Half>(
      std::vector<Half>{Half::FromFloat(1.5f), Half{0x7bff}, Half{0x0001}}, {3});
  EXPECT_THAT(ValueOrFail(f16.to_host<float>()), ElementsAre(1.5f, 65504.0f, 0x1p-24f));
  Tensor bf16 = Tensor::FromHost<BFloat16>(std::vector<BFloat16>{BFloat16{0x4049}}, {1});
  EXPECT_THAT(ValueOrFail(bf16.to_host<float>()), ElementsAre(3.140625f));
  Tensor i32 = I32({-5, std::numeric_limits<int32_t>::max()}, {2});
  EXPECT_THAT(ValueOrFail(i32.to_host<int64_t>()),
              ElementsAre(-5, std::numeric_limits<int32_t>::max()));
  Tensor u8 = Tensor::FromHost<uint8_t>(std::vector<uint8_t>{0, 200, 255}, {3});
  EXPECT_THAT(ValueOrFail(u8.to_host<int32_t>()), ElementsAre(0, 200, 255));
  EXPECT_THAT(ValueOrFail(u8.to_host<int64_t>()), ElementsAre(0, 200, 255));
  EXPECT_THAT(ValueOrFail(u8.to_host<float>()), ElementsAre(0, 200, 255));
  EXPECT_THAT(Bits(ValueOrFail(u8.to_host<Half>())),
              ElementsAre(0, Half::FromFloat(200).bits, Half::FromFloat(255).bits));
  EXPECT_THAT(Bits(ValueOrFail(u8.to_host<BFloat16>())),
              ElementsAre(0, BFloat16::FromFloat(200).bits, BFloat16::FromFloat(255).bits));
  const std::array<bool, 2> bools = {false, true};
  Tensor b = Tensor::FromHost<bool>(bools, {2});
  EXPECT_THAT(ValueOrFail(b.to_host<float>()), ElementsAre(0.0f, 1.0f));
  EXPECT_THAT(ValueOrFail(b.to_host<int32_t>()), ElementsAre(0, 1));
}

TEST(Tensor, ToHostNarrowingReadsAreInvalidArgument) {
  Tensor f32 = F32({1.5f}, {1});
  Tensor i64 = Tensor::FromHost<int64_t>(std::vector<int64_t>{1}, {1});
  Tensor i32 = I32({1}, {1});
  Tensor f16 = Tensor::FromHost<Half>(std::vector<Half>{Half{0x3c00}}, {1});
  Tensor bf16 = Tensor::FromHost<BFloat16>(std::vector<BFloat16>{BFloat16{0x3f80}}, {1});
  Tensor u8 = Tensor::FromHost<uint8_t>(std::vector<uint8_t>{1}, {1});

  const auto expect_rejected = [](const absl::Status& s, const char* what) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what << ": " << s;
    EXPECT_THAT(Message(s), HasSubstr("to_host")) << what;
  };
  expect_rejected(f32.to_host<Half>().status(), "f32 as f16");
  expect_rejected(f32.to_host<BFloat16>().status(), "f32 as bf16");
  expect_rejected(f32.to_host<int32_t>().status(), "f32 as i32");
  expect_rejected(f32.to_host<int64_t>().status(), "f32 as i64");
  expect_rejected(i64.to_host<int32_t>().status(), "i64 as i32");
  expect_rejected(i64.to_host<float>().status(), "i64 as f32");
  expect_rejected(i32.to_host<float>().status(), "i32 as f32");
  expect_rejected(i32.to_host<uint8_t>().status(), "i32 as u8");
  expect_rejected(f16.to_host<BFloat16>().status(), "f16 as bf16");
  expect_rejected(f16.to_host<int32_t>().status(), "f16 as i32");
  expect_rejected(bf16.to_host<Half>().status(), "bf16 as f16");
  bool flag = false;
  expect_rejected(u8.CopyToHost(DType::kBool, &flag, 1, {}), "u8 as bool");
  expect_rejected(f32.CopyToHost(DType::kBool, &flag, 1, {}), "f32 as bool");
  expect_rejected(f32.item<int32_t>().status(), "item f32 as i32");
}

TEST(Tensor, CopyToHostWrongCountIsInvalidArgument) {
  Tensor t = F32({1, 2, 3, 4}, {2, 2});
  float out[8] = {};
  EXPECT_EQ(t.CopyToHost(DType::kF32, out, 3, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.CopyToHost(DType::kF32, out, 8, {}).code(), absl::StatusCode::kInvalidArgument);
  KILN_EXPECT_OK(t.CopyToHost(DType::kF32, out, 4, {}));
  EXPECT_EQ(out[3], 4.0f);
}

TEST(Tensor, ToHostOfAViewIsRowMajor) {
  Tensor t = transpose(F32({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1);
  EXPECT_THAT(ReadF32(t), ElementsAre(1, 4, 2, 5, 3, 6));
  Tensor h =
      transpose(Tensor::FromHost<Half>(std::vector<Half>{Half::FromFloat(1), Half::FromFloat(2),
                                                         Half::FromFloat(3), Half::FromFloat(4)},
                                       {2, 2}),
                0, 1);
  EXPECT_THAT(ReadF32(h), ElementsAre(1, 3, 2, 4));
}

TEST(Tensor, ToHostRealizesALazyTensor) {
  Tensor x = F32({1, 2}, {2});
  Tensor y = x * 3.0;
  EXPECT_FALSE(y.is_realized());
  EXPECT_THAT(ReadF32(y), ElementsAre(3, 6));
  EXPECT_TRUE(y.is_realized());
}

TEST(Tensor, ItemOfOneElement) {
  EXPECT_EQ(ValueOrFail(F32({4.5f}, {}).item<float>()), 4.5f);
  EXPECT_EQ(ValueOrFail(F32({4.5f}, {1, 1, 1}).item<float>()), 4.5f);
  EXPECT_EQ(ValueOrFail(I32({-9}, {1}).item<int64_t>()), -9);            // widening
  EXPECT_EQ(ValueOrFail(sum(F32({1, 2, 3}, {3})).item<float>()), 6.0f);  // realizes first
  const std::array<bool, 1> b = {true};
  EXPECT_TRUE(ValueOrFail(Tensor::FromHost<bool>(b, {1}).item<bool>()));
}

TEST(Tensor, ItemOfSeveralElementsIsInvalidArgument) {
  absl::StatusOr<float> v = F32({1, 2}, {2}).item<float>();
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(v.status()), HasSubstr("item"));
  EXPECT_THAT(Message(v.status()), HasSubstr("2 elements"));
  absl::StatusOr<float> empty = Tensor::FromHostBytes(DType::kF32, {0}, nullptr, 0).item<float>();
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- Undefined tensors

TEST(Tensor, UndefinedTensorReportsFailedPrecondition) {
  const Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_FALSE(t.ok());
  EXPECT_FALSE(t.is_realized());
  EXPECT_EQ(t.node(), nullptr);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.realize().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.to_host<float>().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.item<float>().status().code(), absl::StatusCode::kFailedPrecondition);
  float out = 0;
  EXPECT_EQ(t.CopyToHost(DType::kF32, &out, 1, {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RealizeAll({t}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RealizeAll({F32({1}, {1}) + 1.0, t}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.ToString(), "undefined");
  // Metadata of a non-ok tensor: f32[] on the CPU.
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.device(), Device::Cpu());
}

TEST(Tensor, OpsOnUndefinedTensorFailWithFailedPrecondition) {
  const Tensor u;
  const Tensor x = F32({1, 2}, {2});
  const Tensor results[] = {neg(u),
                            u + 1.0,
                            add(x, u),
                            add(u, x),
                            matmul(u, u),
                            sum(u),
                            reshape(u, {1}),
                            cast(u, DType::kF16),
                            concat({x, u}, 0),
                            transpose(u, 0, 1),
                            where(u, x, x),
                            zeros_like(u)};
  for (const Tensor& r : results) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_EQ(r.realize().code(), absl::StatusCode::kFailedPrecondition);
  }
}

// ---- Error values

TEST(Tensor, ErrorTensorsPropagateTheFirstErrorUnchanged) {
  const Tensor a = F32({1, 2}, {2});
  const Tensor b = F32({1, 2, 3}, {3});
  const Tensor e = a + b;  // shapes do not broadcast
  ASSERT_FALSE(e.ok());
  const absl::Status root = e.status();
  EXPECT_EQ(root.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(root), HasSubstr("add"));

  Tensor chain = neg(e);
  chain = chain * 2.0;
  chain = exp(chain);
  chain = sum(chain, 0, true);
  chain = reshape(chain, {1, 1});
  chain = cast(chain, DType::kF16);
  chain = matmul(chain, chain);
  chain = add(F32({1}, {1}), chain);  // error in the second input
  chain = concat({a, chain}, 0);
  chain = where(F32({1}, {1}) > F32({0}, {1}), chain, a);
  EXPECT_EQ(chain.status(), root);
  EXPECT_EQ(chain.realize(), root);
  EXPECT_EQ(chain.to_host<float>().status(), root);
  EXPECT_EQ(chain.item<float>().status(), root);
  EXPECT_EQ(RealizeAll({a * 2.0, chain}), root);
  EXPECT_FALSE(chain.is_realized());
  EXPECT_EQ(chain.ToString(), "error: " + Message(root));
}

TEST(Tensor, ErrorFromTheFirstErroneousInputWins) {
  const Tensor a = F32({1, 2}, {2});
  const Tensor e1 = a + F32({1, 2, 3}, {3});
  const Tensor e2 = sqrt(I32({1}, {1}));  // integer input to a floating op
  ASSERT_FALSE(e1.ok());
  ASSERT_FALSE(e2.ok());
  ASSERT_NE(e1.status(), e2.status());
  EXPECT_EQ(add(e1, e2).status(), e1.status());
  EXPECT_EQ(add(e2, e1).status(), e2.status());
  EXPECT_EQ(add(a, e2).status(), e2.status());
}

TEST(Tensor, ErrorTensorMetadata) {
  const Tensor e = Tensor::Error(absl::NotFoundError("no such weight"));
  EXPECT_TRUE(e.defined());
  EXPECT_FALSE(e.ok());
  EXPECT_FALSE(e.is_realized());
  EXPECT_EQ(e.status(), absl::NotFoundError("no such weight"));
  EXPECT_EQ(e.rank(), 0);
  EXPECT_EQ(e.dtype(), DType::kF32);
  EXPECT_EQ(e.device(), Device::Cpu());
  EXPECT_EQ(e.ToString(), "error: no such weight");
  EXPECT_EQ((e + 1.0).status(), e.status());
}

TEST(Tensor, ErrorWithOkStatusIsStillAnError) {
  const Tensor e = Tensor::Error(absl::OkStatus());
  EXPECT_FALSE(e.ok());
  EXPECT_FALSE(e.status().ok());
  EXPECT_FALSE(e.realize().ok());
}

// ---- Device

TEST(Device, ParseAndToString) {
  EXPECT_EQ(ValueOrFail(Device::Parse("cpu")), Device::Cpu());
  EXPECT_EQ(ValueOrFail(Device::Parse("cuda")), Device::Cuda(0));
  EXPECT_EQ(ValueOrFail(Device::Parse("cuda:0")), Device::Cuda(0));
  EXPECT_EQ(ValueOrFail(Device::Parse("cuda:3")), Device::Cuda(3));
  EXPECT_EQ(Device::Cpu().ToString(), "cpu");
  EXPECT_EQ(Device::Cuda().ToString(), "cuda");
  EXPECT_EQ(Device::Cuda(2).ToString(), "cuda:2");
  for (const Device& d : {Device::Cpu(), Device::Cuda(), Device::Cuda(5)}) {
    EXPECT_EQ(ValueOrFail(Device::Parse(d.ToString())), d);
  }
  EXPECT_FALSE(Device::Cpu() == Device::Cuda());
  EXPECT_FALSE(Device::Cuda(0) == Device::Cuda(1));
}

TEST(Device, ParseRejectsUnknownText) {
  for (const char* text : {"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "cuda1",
                           "cpu:0", " cuda", "cuda:99999999999"}) {
    absl::StatusOr<Device> d = Device::Parse(text);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << "'" << text << "'";
  }
}

// ---- Printing

TEST(Tensor, ToStringForms) {
  const Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(x.ToString(), "f32[2,3] cpu realized");
  EXPECT_EQ((x + x).ToString(), "f32[2,3] cpu lazy");
  EXPECT_EQ(F32({1}, {}).ToString(), "f32[] cpu realized");
  const Dim pos(Symbol("pos", 100));
  EXPECT_EQ(zeros({pos + 1, 64}, DType::kBF16).ToString(), "bf16[pos+1,64] cpu lazy");
  EXPECT_EQ(zeros({2}, DType::kF32, Device::Cuda()).ToString(), "f32[2] cuda lazy");
  EXPECT_EQ(zeros({2}, DType::kI64, Device::Cuda(1)).ToString(), "i64[2] cuda:1 lazy");
  EXPECT_EQ(Tensor().ToString(), "undefined");
}

// ---- Deep traces

TEST(Tensor, DroppingADeepLazyChainDoesNotOverflowTheStack) {
  const Tensor x = F32({1}, {1});
  Tensor t = x;
  std::weak_ptr<Node> early;
  for (int i = 0; i < 200000; ++i) {
    t = t + x;
    if (i == 10) early = t.node();
  }
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(early.expired());
  t = Tensor();
  EXPECT_TRUE(early.expired());
  EXPECT_TRUE(x.is_realized());  // the leaf itself survives
}

TEST(Tensor, DroppingADeepChainThroughOtherInputs) {
  const Tensor x = F32({1}, {1});
  Tensor t = x;
  for (int i = 0; i < 200000; ++i) t = (i % 2) ? add(x, t) : neg(t);
  ASSERT_TRUE(t.ok()) << t.status();
  t = Tensor();
  SUCCEED();
}

TEST(Tensor, RealizingADeepChainWorks) {
  const Tensor x = F32({1, 2}, {2});
  Tensor t = x;
  std::weak_ptr<Node> middle;
  for (int i = 0; i < 20000; ++i) {
    t = t + x;
    if (i == 10000) middle = t.node();
  }
  KILN_EXPECT_OK(t.realize());
  EXPECT_THAT(ReadF32(t), ElementsAre(20001, 40002));
  // The realized tensor is a leaf: the chain behind it is released.
  EXPECT_TRUE(middle.expired());
}

// ---- Realized tensors are leaves

TEST(Tensor, RealizedTensorsBecomeLeaves) {
  const Tensor x = F32({1, 2, 3}, {3});
  const Tensor y = x * x;
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y.node()->op, OpKind::kMul);
  EXPECT_EQ(y.node()->inputs.size(), 2u);
  const Tensor alias = y;  // shares the node
  KILN_EXPECT_OK(y.realize());
  EXPECT_TRUE(y.is_realized());
  EXPECT_TRUE(alias.is_realized());
  EXPECT_EQ(y.node()->op, OpKind::kLeaf);
  EXPECT_TRUE(y.node()->inputs.empty());
  EXPECT_TRUE(std::holds_alternative<NoAttrs>(y.node()->attrs));
  EXPECT_TRUE(y.shape() == Shape({3}));
  EXPECT_EQ(y.ToString(), "f32[3] cpu realized");

  // A later trace starts at y: x is not part of it.
  const Tensor z = y + x;
  absl::StatusOr<Trace> trace = Trace::Collect({z});
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->nodes().size(), 3u);  // y, x, add
  EXPECT_GE(trace->IndexOf(y.node().get()), 0);
  EXPECT_THAT(ReadF32(z), ElementsAre(2, 6, 12));
  EXPECT_THAT(ReadF32(y), ElementsAre(1, 4, 9));
}

TEST(Tensor, RealizedSymbolicTensorHasConcreteShape) {
  const Symbol pos("tensor_pos", 32);
  const Tensor t = iota(Dim(pos) + 1, 0, 1, DType::kI32);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(t.shape().is_concrete());
  KILN_EXPECT_OK(t.realize(Bindings{{pos, 3}}));
  EXPECT_TRUE(t.shape() == Shape({4}));
  // Reading it needs no bindings any more.
  EXPECT_THAT(ValueOrFail(t.to_host<int32_t>()), ElementsAre(0, 1, 2, 3));
}

TEST(Tensor, ToHostWithBindings) {
  const Symbol pos("tensor_pos2", 32);
  const Tensor t = full({Dim(pos) + 2}, 5.0);
  absl::StatusOr<std::vector<float>> v = t.to_host<float>(Bindings{{pos, 1}});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(*v, ElementsAre(5, 5, 5));
}

}  // namespace
}  // namespace kiln
