// Dimensions: concrete sizes or affine expressions over named symbols.
//
// A Symbol is a named size variable with a declared upper bound (its lower
// bound is 0), for sizes that change between calls of the same code: the
// decode position, the cached KV length. Values are bound when a trace is
// realized (see Bindings), so traces that differ only in those values are
// structurally equal and share compiled kernels.
//
// A Dim is offset + sum(coeff_i * symbol_i): enough for `pos + 1`,
// `(pos + n) - pos`, or the sum of concatenated lengths.
#ifndef KILN_TENSOR_DIM_H_
#define KILN_TENSOR_DIM_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensor/stable_hash.h"

namespace kiln {

// The largest concrete size or symbol bound kiln accepts; products of a few
// such sizes still fit in int64.
inline constexpr int64_t kMaxDimValue = int64_t{1} << 40;

// Interned: two Symbols with the same name and bound share one SymbolInfo.
struct SymbolInfo {
  std::string name;
  int64_t max_value;
};

class Symbol {
 public:
  // `max_value` is the largest value the symbol may be bound to.
  Symbol(absl::string_view name, int64_t max_value);

  const std::string& name() const { return info_->name; }
  int64_t max_value() const { return info_->max_value; }
  const SymbolInfo* info() const { return info_; }

  // A valid symbol has a C identifier as its name and 0 <= max <= kMaxDimValue.
  absl::Status Validate() const;

  friend bool operator==(const Symbol& a, const Symbol& b) { return a.info_ == b.info_; }

 private:
  friend class Dim;
  explicit Symbol(const SymbolInfo* info) : info_(info) {}
  const SymbolInfo* info_;
};

// Values for symbols, given when a trace is realized.
class Bindings {
 public:
  Bindings() = default;
  Bindings(std::initializer_list<std::pair<Symbol, int64_t>> values);

  void Set(const Symbol& symbol, int64_t value) { values_[symbol.info()] = value; }
  std::optional<int64_t> Find(const SymbolInfo* symbol) const;
  bool empty() const { return values_.empty(); }
  const absl::flat_hash_map<const SymbolInfo*, int64_t>& values() const { return values_; }

 private:
  absl::flat_hash_map<const SymbolInfo*, int64_t> values_;
};

class Dim {
 public:
  struct Term {
    const SymbolInfo* symbol;
    int64_t coeff;  // never 0
    friend bool operator==(const Term&, const Term&) = default;
  };

  Dim() : Dim(0) {}
  Dim(int64_t value) : offset_(value) {}  // NOLINT: a size is a Dim
  Dim(int value) : offset_(value) {}      // NOLINT
  Dim(const Symbol& symbol);              // NOLINT

  bool is_concrete() const { return terms_.empty(); }
  // The value of a concrete Dim; CHECK-fails on a symbolic one.
  int64_t value() const;
  std::optional<int64_t> concrete() const {
    return is_concrete() ? std::optional<int64_t>(offset_) : std::nullopt;
  }
  int64_t offset() const { return offset_; }
  const absl::InlinedVector<Term, 1>& terms() const { return terms_; }

  // Extremes over all bindings of the symbols to [0, max].
  int64_t min_value() const;
  int64_t max_value() const;

  // Concrete value under `bindings`; FailedPrecondition for an unbound symbol.
  absl::StatusOr<int64_t> Evaluate(const Bindings& bindings) const;

  // Arithmetic that overflows int64 yields an invalid Dim (see Validate).
  friend Dim operator+(const Dim& a, const Dim& b);
  friend Dim operator-(const Dim& a, const Dim& b);
  friend Dim operator*(const Dim& a, int64_t k);
  friend Dim operator*(int64_t k, const Dim& a) { return a * k; }

  // A valid Dim came from valid symbols and values without overflow and is
  // never negative. `what` names the dimension in the message.
  absl::Status Validate(absl::string_view what) const;

  std::string ToString() const;
  void Hash(StableHasher& hasher) const;

  friend bool operator==(const Dim& a, const Dim& b) {
    return a.offset_ == b.offset_ && a.terms_ == b.terms_ && a.overflow_ == b.overflow_;
  }

 private:
  static Dim Overflowed();
  int64_t offset_ = 0;
  absl::InlinedVector<Term, 1> terms_;  // sorted by (name, max)
  bool overflow_ = false;
};

}  // namespace kiln

#endif  // KILN_TENSOR_DIM_H_
