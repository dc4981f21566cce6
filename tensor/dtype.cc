#include "tensor/dtype.h"

#include "tensor/check.h"

namespace kiln {

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
#define KILN_DTYPE_NAME(e, name, type) \
  case DType::e:                       \
    return name;
    KILN_DTYPES(KILN_DTYPE_NAME)
#undef KILN_DTYPE_NAME
  }
  KILN_UNREACHABLE("unknown DType value");
}

std::optional<DType> ParseDType(absl::string_view text) {
#define KILN_DTYPE_PARSE(e, name, type) \
  if (text == name) return DType::e;
  KILN_DTYPES(KILN_DTYPE_PARSE)
#undef KILN_DTYPE_PARSE
  return std::nullopt;
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
#define KILN_DTYPE_SIZE(e, name, type) \
  case DType::e:                       \
    return sizeof(type);
    KILN_DTYPES(KILN_DTYPE_SIZE)
#undef KILN_DTYPE_SIZE
  }
  KILN_UNREACHABLE("unknown DType value");
}

bool IsFloating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

bool IsInteger(DType dtype) {
  return dtype == DType::kI32 || dtype == DType::kI64 || dtype == DType::kU8;
}

bool IsLosslessConversion(DType from, DType to) {
  if (from == to) return true;
  switch (from) {
    case DType::kBool:
      return true;
    case DType::kU8:
      return to != DType::kBool;
    case DType::kF16:
    case DType::kBF16:
      return to == DType::kF32;
    case DType::kI32:
      return to == DType::kI64;
    case DType::kF32:
    case DType::kI64:
      return false;
  }
  KILN_UNREACHABLE("unknown DType value");
}

}  // namespace kiln
