// The values templates compute with, modelled on the Python objects jinja2
// hands around: Undefined, None, bool, int (int64 here), float, str (UTF-8),
// list/tuple and the other sequence types, dict (insertion-ordered, keys
// compared as Python does), jinja2's namespace, callables and objects with
// attributes (the loop variable).
//
// Values are immutable and cheap to copy (containers are shared), except
// namespaces, which templates mutate with `{% set ns.x = ... %}`. Namespaces
// live in the arena of the render that made them (Value holds a plain
// pointer), so a template cannot build an ownership cycle or a chain whose
// destruction recurses without bound.
#ifndef KILN_MODELS_CHAT_JINJA_VALUE_H_
#define KILN_MODELS_CHAT_JINJA_VALUE_H_

#include <cstdint>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace kiln::models::jinja {

class CallContext;  // the renderer, as callables see it (jinja_render.h)

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,  // every sequence type; see SeqKind
  kDict,
  kNamespace,
  kCallable,
  kObject,
};

// The Python sequence types templates meet: they print, compare and index
// differently. kIterator stands for the generators jinja2's filters return
// (map, select, ...): always true, no len(), and exhausted once iterated.
enum class SeqKind : uint8_t { kList, kTuple, kIterator, kDictKeys, kDictValues, kDictItems };

class Dict;
class Namespace;
class Callable;
class Object;
struct ListData;

class Value {
 public:
  Value() : int_(0) {}  // Undefined, no hint

  static Value Undefined(std::string hint);
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double d);
  static Value String(std::string s);
  // markupsafe.Markup: a str that escapes what is added to it.
  static Value Markup(std::string s);
  static Value List(std::vector<Value> items, SeqKind kind = SeqKind::kList);
  static Value Tuple(std::vector<Value> items) { return List(std::move(items), SeqKind::kTuple); }
  static Value GroupTuple(Value grouper, Value list);
  static Value FromDict(Dict dict);
  static Value FromNamespace(Namespace* ns);
  static Value FromCallable(std::shared_ptr<const Callable> callable);
  static Value FromObject(std::shared_ptr<Object> object);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // bool, int or float: Python's numbers (bool is an int there).
  bool is_number() const { return kind_ == Kind::kBool || kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  // bool or int.
  bool is_integral() const { return kind_ == Kind::kBool || kind_ == Kind::kInt; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }
  bool is_object() const { return kind_ == Kind::kObject; }

  bool bool_value() const { return bool_; }
  // For bool and int.
  int64_t int_value() const { return kind_ == Kind::kBool ? (bool_ ? 1 : 0) : int_; }
  // For any number.
  double number_value() const { return kind_ == Kind::kFloat ? float_ : static_cast<double>(int_value()); }
  double float_value() const { return float_; }
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  bool markup() const { return markup_; }
  const ListData& list() const;
  const std::vector<Value>& items() const;
  SeqKind seq_kind() const;
  const Dict& dict() const;
  Namespace* ns() const { return ns_; }
  const Callable& callable() const;
  Object& object() const;
  // The message an error about this Undefined gives ("'x' is undefined").
  std::string undefined_message() const;

  // Nesting depth of lists and dicts (1 for a flat one, 0 for scalars).
  int depth() const;
  // Object identity, for `is sameas` and for the types Python compares by
  // identity (namespaces, callables, iterators).
  const void* identity() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  union {
    bool bool_;
    int64_t int_;
    double float_;
    Namespace* ns_;
  };
  // String, ListData, Dict, Callable, Object, or the Undefined's hint.
  std::shared_ptr<void> ptr_;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

class Callable {
 public:
  virtual ~Callable() = default;
  virtual std::string Repr() const = 0;
  // Python's type name, for messages.
  virtual std::string TypeName() const { return "function"; }
  virtual absl::StatusOr<Value> Call(CallContext& ctx, CallArgs args) const = 0;
};

// An object with attributes (and possibly state), like jinja2's LoopContext.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string TypeName() const = 0;
  virtual std::string Repr() const = 0;
  // `self` is the Value holding this object, for bound methods. Undefined
  // when there is no such attribute.
  virtual Value GetAttr(absl::string_view name, const Value& self) const = 0;
  // Calls method `name` (one GetAttr returned as a bound method).
  virtual absl::StatusOr<Value> CallMethod(absl::string_view name, CallContext& ctx,
                                           CallArgs args) = 0;
};

// A dict: insertion order, keys compared with Python's == (1, 1.0 and True
// are one key). Keys must be hashable (CheckHashable).
class Dict {
 public:
  const Value* Find(const Value& key) const;
  const Value* Find(absl::string_view key) const;
  // Replaces the value of an existing key in place, else appends.
  void Set(Value key, Value value);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  int depth() const { return depth_; }

 private:
  std::vector<std::pair<Value, Value>> entries_;
  // String key -> position, built once a dict is large enough for linear
  // search to matter.
  std::unordered_map<std::string, size_t> index_;
  bool indexed_ = false;
  int depth_ = 1;
};

class Namespace {
 public:
  const Value* Find(absl::string_view name) const;
  void Set(std::string name, Value value);
  const std::vector<std::pair<std::string, Value>>& attrs() const { return attrs_; }

 private:
  std::vector<std::pair<std::string, Value>> attrs_;
};

struct ListData {
  std::vector<Value> items;
  SeqKind kind = SeqKind::kList;
  int depth = 1;
  // For kIterator: how many items were already consumed.
  mutable size_t cursor = 0;
  // groupby's (grouper, list) tuples, which also have those attributes.
  bool group = false;
};


inline const ListData& Value::list() const { return *static_cast<const ListData*>(ptr_.get()); }
inline const std::vector<Value>& Value::items() const { return list().items; }
inline SeqKind Value::seq_kind() const { return list().kind; }
inline const Dict& Value::dict() const { return *static_cast<const Dict*>(ptr_.get()); }
inline const Callable& Value::callable() const { return *static_cast<const Callable*>(ptr_.get()); }
inline Object& Value::object() const { return *static_cast<Object*>(ptr_.get()); }

// Python's truth value.
bool Truthy(const Value& v);
// Python's ==.
bool Equals(const Value& a, const Value& b);
// Python's <, <=, >, >= as a three-way comparison of values of comparable
// types; InvalidArgument (Python's TypeError) otherwise. `op` names the
// operator for the message.
absl::StatusOr<int> Compare(const Value& a, const Value& b, absl::string_view op);
// InvalidArgument "unhashable type: 'list'" for values that cannot be dict keys.
absl::Status CheckHashable(const Value& v);
// Python's type(v).__name__.
std::string TypeName(const Value& v);

// Python's repr() and str() (str prints Undefined as "").
std::string Repr(const Value& v);
std::string Str(const Value& v);
void AppendRepr(const Value& v, std::string* out, int depth = 0);
void AppendStr(const Value& v, std::string* out);
// Python's repr of a float: shortest round-trip digits, "1.0", "1e-05",
// "inf", "nan".
std::string FloatRepr(double d);
// Python's repr of a str, quotes included.
void AppendStringRepr(absl::string_view s, std::string* out);

// JSON in: objects become dicts (in the json type's key order: use
// ordered_json to keep a file's order, as Python does), arrays lists,
// integers int (uint64 past int64 becomes float), null None. InvalidArgument
// past kMaxJsonDepth (below the renderer's value depth limit, so that any
// value accepted here can be used).
inline constexpr int kMaxJsonDepth = 200;
absl::StatusOr<Value> FromJson(const nlohmann::json& json);
absl::StatusOr<Value> FromJson(const nlohmann::ordered_json& json);
// JSON out, for values that have a JSON form (InvalidArgument otherwise).
absl::StatusOr<nlohmann::ordered_json> ToJson(const Value& v);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_VALUE_H_
