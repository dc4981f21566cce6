// Shared machinery of the code generator: a code buffer, size expressions
// over the kernel's symbols, strides, and view inversion (coordinates of a
// view -> coordinates and element offset in the tensor it views).
#ifndef KILN_OPTIMIZER_CODEGEN_EMITTER_H_
#define KILN_OPTIMIZER_CODEGEN_EMITTER_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizer/ugraph.h"

namespace kiln::codegen {

// The symbols a kernel reads, in a fixed order: kernel argument s[i].
class SymbolTable {
 public:
  void Add(const Dim& d);
  void Add(const Shape& s) {
    for (const Dim& d : s) Add(d);
  }
  int IndexOf(const SymbolInfo* symbol) const;
  const std::vector<const SymbolInfo*>& symbols() const { return symbols_; }

 private:
  std::vector<const SymbolInfo*> symbols_;  // sorted by (name, max)
};

class Emitter {
 public:
  Emitter(const ugraph::KernelGraph& graph, const ugraph::Kernel& kernel);

  // Code, one statement per line, at the current indentation.
  void Line(absl::string_view text);
  template <typename... Args>
  void Linef(const Args&... args) {
    Line(absl::StrCat(args...));
  }
  void Open(absl::string_view head);  // "head {" and indent
  void Close(absl::string_view tail = "}");
  std::string Fresh(absl::string_view prefix);  // a new variable name
  const std::string& code() const { return code_; }

  // Index arithmetic (sizes, strides, coordinates, element offsets): the
  // type its variables are declared with and its literals. 64-bit unless
  // UseIndex32 (where every offset fits, FitsIndex32), chosen before any
  // code is emitted.
  void UseIndex32(bool on);
  // Whether every index the kernel (a tiled one) forms fits a 32-bit int:
  // all sizes concrete, and for each tensor it reads or writes, each shape
  // of the views it reads through, its grid and its loop, the largest
  // offset over coordinates up to kIndexSlackTiles of its largest tile (at
  // least 16) past each dim's end below 2^31. Coordinates past the end are
  // formed, never read: the last block's tile runs past it by less than a
  // tile, a padded tile axis by less than 16, the ring's copies ahead of
  // the loop by its stages (at most 4, tiled_plan.cc) of loop tiles.
  bool FitsIndex32() const;
  const char* Index() const { return index32_ ? "int" : "i64"; }
  std::string IndexLiteral(int64_t value) const {
    return index32_ ? absl::StrCat(value) : absl::StrCat(value, "LL");
  }

  // A C++ expression (of the index type) for a size.
  std::string DimExpr(const Dim& d) const;
  // Product of dims, as an expression.
  std::string NumelExpr(const Shape& s) const;

  // Local slot of a DTensor in the kernel's pointer array p.t[].
  int Slot(int tensor) const;
  const std::vector<int>& slots() const { return slots_; }
  const SymbolTable& symbols() const { return symbols_; }
  // Declares (once) and returns the stride variables of a tensor.
  std::vector<std::string> Strides(int tensor);

  // Coordinates of the view's source shape for `coords` (of view.shape).
  std::vector<std::string> Invert(const ugraph::View& view, std::vector<std::string> coords);
  // Element offset into view.tensor for `coords` (of view.shape).
  std::string Offset(const ugraph::View& view, const std::vector<std::string>& coords);
  // Element offset of `coords` in a DTensor (its own shape).
  std::string TensorOffset(int tensor, const std::vector<std::string>& coords);
  // Splits a linear index over `shape` into coordinate variables.
  std::vector<std::string> Unravel(const std::string& linear, const Shape& shape);
  // Row-major linear index of coordinates over `shape`.
  std::string Linearize(const std::vector<std::string>& coords, const Shape& shape);

  const ugraph::KernelGraph& graph() const { return graph_; }
  // The kernel's place in the graph's execution order (-1: not one of its kernels).
  int kernel_index() const;

 private:
  std::vector<std::string> InvertReshape(const Shape& in, const Shape& out,
                                         const std::vector<std::string>& coords);

  const ugraph::KernelGraph& graph_;
  const ugraph::Kernel& kernel_;
  std::string code_;
  int indent_ = 1;
  int counter_ = 0;
  std::vector<int> slots_;  // DTensor ids by slot
  SymbolTable symbols_;
  std::map<int, std::vector<std::string>> strides_;
  bool index32_ = false;
};

// Emitter::FitsIndex32's slack past each dim's end, in the kernel's largest tiles.
inline constexpr int64_t kIndexSlackTiles = 8;

// Names used in generated code for a dtype: "f32", "f16", ...
std::string DTypeSuffix(DType dtype);
// An f32 value rounded to float dtype `dtype` as the CPU stores it
// ("round_bf16(v)"); `v` itself for f32.
std::string RoundedTo(DType dtype, const std::string& v);
// The device decoders of a block format: dequant_<name>, dequant8_<name>
// (tiles/quant.cuh), name "q8_0" for Q8_0.
std::string QuantDecoderName(QuantFormat format);
// The bytes of u8 tensor `tensor` from element `offset` on, as the
// decoders take them.
std::string BlockBytes(Emitter& e, int tensor, const std::string& offset);
// The compute type of a dtype: "float" or "i64".
std::string ComputeType(DType dtype);
// A literal of compute type for `value` stored as `dtype` (rounded as the
// CPU stores it).
std::string Literal(double value, DType dtype);

}  // namespace kiln::codegen

#endif  // KILN_OPTIMIZER_CODEGEN_EMITTER_H_
