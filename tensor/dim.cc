#include "tensor/dim.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "tensor/check.h"

namespace kiln {
namespace {

const SymbolInfo* Intern(absl::string_view name, int64_t max_value) {
  static std::mutex mutex;
  static auto* table =
      new std::map<std::pair<std::string, int64_t>, std::unique_ptr<SymbolInfo>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(std::string(name), max_value);
  auto it = table->find(key);
  if (it == table->end()) {
    auto info = std::make_unique<SymbolInfo>(SymbolInfo{key.first, max_value});
    it = table->emplace(std::move(key), std::move(info)).first;
  }
  return it->second.get();
}

bool TermLess(const Dim::Term& a, const Dim::Term& b) {
  if (a.symbol->name != b.symbol->name) return a.symbol->name < b.symbol->name;
  return a.symbol->max_value < b.symbol->max_value;
}

bool IsIdentifier(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

int64_t Saturate(__int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace

Symbol::Symbol(absl::string_view name, int64_t max_value)
    : info_(Intern(name, max_value)) {}

absl::Status Symbol::Validate() const {
  if (!IsIdentifier(name())) {
    return absl::InvalidArgumentError(
        absl::StrCat("symbol name '", name(), "' is not an identifier"));
  }
  if (max_value() < 0 || max_value() > kMaxDimValue) {
    return absl::InvalidArgumentError(absl::StrCat(
        "symbol '", name(), "' has upper bound ", max_value(), "; it must be in [0, ",
        kMaxDimValue, "]"));
  }
  return absl::OkStatus();
}

Bindings::Bindings(std::initializer_list<std::pair<Symbol, int64_t>> values) {
  for (const auto& [symbol, value] : values) Set(symbol, value);
}

std::optional<int64_t> Bindings::Find(const SymbolInfo* symbol) const {
  auto it = values_.find(symbol);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

Dim::Dim(const Symbol& symbol) : offset_(0) { terms_.push_back({symbol.info(), 1}); }

Dim Dim::Overflowed() {
  Dim d;
  d.overflow_ = true;
  return d;
}

int64_t Dim::value() const {
  KILN_CHECK(is_concrete(), "Dim::value() called on a symbolic dimension");
  return offset_;
}

int64_t Dim::min_value() const {
  __int128 v = offset_;
  for (const Term& t : terms_) {
    v += std::min<__int128>(0, static_cast<__int128>(t.coeff) * t.symbol->max_value);
  }
  return Saturate(v);
}

int64_t Dim::max_value() const {
  __int128 v = offset_;
  for (const Term& t : terms_) {
    v += std::max<__int128>(0, static_cast<__int128>(t.coeff) * t.symbol->max_value);
  }
  return Saturate(v);
}

absl::StatusOr<int64_t> Dim::Evaluate(const Bindings& bindings) const {
  __int128 v = offset_;
  for (const Term& t : terms_) {
    std::optional<int64_t> value = bindings.Find(t.symbol);
    if (!value) {
      return absl::FailedPreconditionError(absl::StrCat(
          "symbol '", t.symbol->name, "' is unbound: pass its value in the Bindings given to "
          "realize()"));
    }
    v += static_cast<__int128>(t.coeff) * *value;
  }
  if (v < INT64_MIN || v > INT64_MAX) {
    return absl::OutOfRangeError(absl::StrCat("dimension ", ToString(), " overflows"));
  }
  return static_cast<int64_t>(v);
}

Dim operator+(const Dim& a, const Dim& b) {
  if (a.overflow_ || b.overflow_) return Dim::Overflowed();
  Dim out;
  if (__builtin_add_overflow(a.offset_, b.offset_, &out.offset_)) return Dim::Overflowed();
  // Merge the two sorted term lists, dropping terms that cancel.
  size_t i = 0, j = 0;
  while (i < a.terms_.size() || j < b.terms_.size()) {
    if (j == b.terms_.size() || (i < a.terms_.size() && TermLess(a.terms_[i], b.terms_[j]))) {
      out.terms_.push_back(a.terms_[i++]);
    } else if (i == a.terms_.size() || TermLess(b.terms_[j], a.terms_[i])) {
      out.terms_.push_back(b.terms_[j++]);
    } else {
      int64_t coeff;
      if (__builtin_add_overflow(a.terms_[i].coeff, b.terms_[j].coeff, &coeff)) {
        return Dim::Overflowed();
      }
      if (coeff != 0) out.terms_.push_back({a.terms_[i].symbol, coeff});
      ++i;
      ++j;
    }
  }
  return out;
}

Dim operator*(const Dim& a, int64_t k) {
  if (a.overflow_) return Dim::Overflowed();
  if (k == 0) return Dim(0);
  Dim out;
  if (__builtin_mul_overflow(a.offset_, k, &out.offset_)) return Dim::Overflowed();
  for (const Dim::Term& t : a.terms_) {
    int64_t coeff;
    if (__builtin_mul_overflow(t.coeff, k, &coeff)) return Dim::Overflowed();
    out.terms_.push_back({t.symbol, coeff});
  }
  return out;
}

Dim operator-(const Dim& a, const Dim& b) {
  if (b.offset_ == INT64_MIN) return Dim::Overflowed();
  return a + b * -1;
}

absl::Status Dim::Validate(absl::string_view what) const {
  if (overflow_) {
    return absl::InvalidArgumentError(absl::StrCat(what, " overflows int64"));
  }
  for (const Term& t : terms_) {
    if (absl::Status s = Symbol(t.symbol).Validate(); !s.ok()) return s;
  }
  if (min_value() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", ToString(), " can be negative (its least value is ",
                     min_value(), ")"));
  }
  if (max_value() > kMaxDimValue) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", ToString(), " can reach ",
                                                   max_value(), ", above kiln's limit of ",
                                                   kMaxDimValue));
  }
  return absl::OkStatus();
}

std::string Dim::ToString() const {
  if (overflow_) return "<overflow>";
  std::string out;
  for (const Term& t : terms_) {
    if (t.coeff < 0) {
      absl::StrAppend(&out, "-");
    } else if (!out.empty()) {
      absl::StrAppend(&out, "+");
    }
    const uint64_t magnitude =
        t.coeff < 0 ? 0 - static_cast<uint64_t>(t.coeff) : static_cast<uint64_t>(t.coeff);
    if (magnitude != 1) absl::StrAppend(&out, magnitude, "*");
    absl::StrAppend(&out, t.symbol->name);
  }
  if (out.empty()) return absl::StrCat(offset_);
  if (offset_ > 0) absl::StrAppend(&out, "+", offset_);
  if (offset_ < 0) absl::StrAppend(&out, offset_);
  return out;
}

void Dim::Hash(StableHasher& hasher) const {
  hasher.Add(offset_).Add(static_cast<uint64_t>(terms_.size())).Add(overflow_);
  for (const Term& t : terms_) {
    hasher.Add(absl::string_view(t.symbol->name)).Add(t.symbol->max_value).Add(t.coeff);
  }
}

}  // namespace kiln
