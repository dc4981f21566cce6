#include "models/chat/jinja_value.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace kiln::models::jinja {

Value Value::Undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.ptr_ = std::make_shared<std::string>(std::move(hint));
  return v;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.int_ = i;
  return v;
}

Value Value::Float(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.float_ = d;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.ptr_ = std::make_shared<std::string>(std::move(s));
  return v;
}

Value Value::Markup(std::string s) {
  Value v = String(std::move(s));
  v.markup_ = true;
  return v;
}

Value Value::List(std::vector<Value> items, SeqKind kind) {
  auto data = std::make_shared<ListData>();
  int depth = 0;
  for (const Value& item : items) depth = std::max(depth, item.depth());
  data->items = std::move(items);
  data->kind = kind;
  data->depth = depth + 1;
  Value v;
  v.kind_ = Kind::kList;
  v.ptr_ = std::move(data);
  return v;
}

Value Value::GroupTuple(Value grouper, Value list) {
  Value v = Tuple({std::move(grouper), std::move(list)});
  std::static_pointer_cast<ListData>(v.ptr_)->group = true;
  return v;
}

Value Value::FromDict(Dict dict) {
  Value v;
  v.kind_ = Kind::kDict;
  v.ptr_ = std::make_shared<Dict>(std::move(dict));
  return v;
}

Value Value::FromNamespace(Namespace* ns) {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.ns_ = ns;
  return v;
}

Value Value::FromCallable(std::shared_ptr<const Callable> callable) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.ptr_ = std::const_pointer_cast<Callable>(std::move(callable));
  return v;
}

Value Value::FromObject(std::shared_ptr<Object> object) {
  Value v;
  v.kind_ = Kind::kObject;
  v.ptr_ = std::move(object);
  return v;
}

std::string Value::undefined_message() const {
  if (ptr_) return *static_cast<const std::string*>(ptr_.get());
  return "value is undefined";
}

int Value::depth() const {
  if (kind_ == Kind::kList) return list().depth;
  if (kind_ == Kind::kDict) return dict().depth();
  return 0;
}

const void* Value::identity() const {
  if (kind_ == Kind::kNamespace) return ns_;
  return ptr_.get();
}

const Value* Dict::Find(const Value& key) const {
  if (key.is_string()) return Find(absl::string_view(key.str()));
  for (const auto& [k, v] : entries_) {
    if (Equals(k, key)) return &v;
  }
  return nullptr;
}

namespace {
constexpr size_t kIndexedDictSize = 16;
}  // namespace

const Value* Dict::Find(absl::string_view key) const {
  if (indexed_) {
    const auto it = index_.find(std::string(key));
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  for (const auto& [k, v] : entries_) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

void Dict::Set(Value key, Value value) {
  depth_ = std::max({depth_, key.depth() + 1, value.depth() + 1});
  if (key.is_string() && indexed_) {
    const auto [it, inserted] = index_.emplace(key.str(), entries_.size());
    if (!inserted) {
      entries_[it->second].second = std::move(value);
      return;
    }
    entries_.emplace_back(std::move(key), std::move(value));
    return;
  }
  for (auto& [k, v] : entries_) {
    if (Equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
  if (!indexed_ && entries_.size() >= kIndexedDictSize) {
    indexed_ = true;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].first.is_string()) index_.emplace(entries_[i].first.str(), i);
    }
  }
}

const Value* Namespace::Find(absl::string_view name) const {
  for (const auto& [k, v] : attrs_) {
    if (k == name) return &v;
  }
  return nullptr;
}

void Namespace::Set(std::string name, Value value) {
  for (auto& [k, v] : attrs_) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  attrs_.emplace_back(std::move(name), std::move(value));
}

bool Truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return v.bool_value();
    case Kind::kInt:
      return v.int_value() != 0;
    case Kind::kFloat:
      return v.float_value() != 0.0;
    case Kind::kString:
      return !v.str().empty();
    case Kind::kList:
      return v.seq_kind() == SeqKind::kIterator || !v.items().empty();
    case Kind::kDict:
      return !v.dict().empty();
    case Kind::kNamespace:
    case Kind::kCallable:
    case Kind::kObject:
      return true;
  }
  return false;
}

namespace {

// Python compares int and float exactly; doubles hold every int64 this
// engine meets in templates closely enough, but exact integers stay exact.
int CompareNumbers(const Value& a, const Value& b) {
  if (a.is_integral() && b.is_integral()) {
    const int64_t x = a.int_value(), y = b.int_value();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const double x = a.number_value(), y = b.number_value();
  if (x < y) return -1;
  if (x > y) return 1;
  if (x == y) return 0;
  return 2;  // NaN: unordered
}

bool SameSeqFamily(const Value& a, const Value& b) {
  const SeqKind x = a.seq_kind(), y = b.seq_kind();
  if (x == SeqKind::kIterator || y == SeqKind::kIterator) return false;
  return x == y;
}

}  // namespace

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return CompareNumbers(a, b) == 0;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kList: {
      if (a.seq_kind() == SeqKind::kIterator || b.seq_kind() == SeqKind::kIterator ||
          a.seq_kind() == SeqKind::kDictValues) {
        return a.identity() == b.identity();
      }
      if (a.seq_kind() != b.seq_kind()) return false;
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      if (a.seq_kind() == SeqKind::kDictKeys || a.seq_kind() == SeqKind::kDictItems) {
        // Set-like views: equal when they hold the same elements.
        for (const Value& item : x) {
          if (std::none_of(y.begin(), y.end(), [&](const Value& o) { return Equals(item, o); }))
            return false;
        }
        return true;
      }
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const Dict& x = a.dict();
      const Dict& y = b.dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.Find(k);
        if (other == nullptr || !Equals(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

absl::StatusOr<int> Compare(const Value& a, const Value& b, absl::string_view op) {
  if (a.is_undefined()) return absl::InvalidArgumentError(a.undefined_message());
  if (b.is_undefined()) return absl::InvalidArgumentError(b.undefined_message());
  if (a.is_number() && b.is_number()) return CompareNumbers(a, b);
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && SameSeqFamily(a, b) &&
      (a.seq_kind() == SeqKind::kList || a.seq_kind() == SeqKind::kTuple)) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      return Compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return absl::InvalidArgumentError(absl::StrCat("'", op, "' not supported between instances of '",
                                                 TypeName(a), "' and '", TypeName(b), "'"));
}

absl::Status CheckHashable(const Value& v) {
  if (v.is_dict() || (v.is_list() && v.seq_kind() != SeqKind::kTuple &&
                      v.seq_kind() != SeqKind::kIterator)) {
    return absl::InvalidArgumentError(absl::StrCat("unhashable type: '", TypeName(v), "'"));
  }
  if (v.is_list() && v.seq_kind() == SeqKind::kTuple) {
    for (const Value& item : v.items()) {
      absl::Status s = CheckHashable(item);
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

std::string TypeName(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return v.markup() ? "Markup" : "str";
    case Kind::kList:
      switch (v.seq_kind()) {
        case SeqKind::kList:
          return "list";
        case SeqKind::kTuple:
          return "tuple";
        case SeqKind::kIterator:
          return "generator";
        case SeqKind::kDictKeys:
          return "dict_keys";
        case SeqKind::kDictValues:
          return "dict_values";
        case SeqKind::kDictItems:
          return "dict_items";
      }
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kCallable:
      return v.callable().TypeName();
    case Kind::kObject:
      return v.object().TypeName();
  }
  return "object";
}

}  // namespace kiln::models::jinja
