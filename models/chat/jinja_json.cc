#include "models/chat/jinja_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_unicode.h"

namespace kiln::models::jinja {
namespace {

template <typename Json>
absl::StatusOr<Value> FromJsonAt(const Json& json, int depth) {
  if (depth > kMaxJsonDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON nests deeper than ", kMaxJsonDepth, " levels"));
  }
  switch (json.type()) {
    case nlohmann::json::value_t::null:
      return Value::None();
    case nlohmann::json::value_t::boolean:
      return Value::Bool(json.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::Int(json.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t u = json.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Value::Int(static_cast<int64_t>(u));
      }
      return Value::Float(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::Float(json.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::String(json.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const Json& item : json) {
        absl::StatusOr<Value> v = FromJsonAt(item, depth + 1);
        if (!v.ok()) return v.status();
        items.push_back(*std::move(v));
      }
      return Value::List(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict dict;
      for (auto it = json.begin(); it != json.end(); ++it) {
        absl::StatusOr<Value> v = FromJsonAt(it.value(), depth + 1);
        if (!v.ok()) return v.status();
        dict.Set(Value::String(it.key()), *std::move(v));
      }
      return Value::FromDict(std::move(dict));
    }
    default:
      return absl::InvalidArgumentError("JSON binary values have no template value");
  }
}

void AppendJsonString(absl::string_view s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const char32_t c = NextCodePoint(s, &pos);
    switch (c) {
      case '"':
        out->append("\\\"");
        continue;
      case '\\':
        out->append("\\\\");
        continue;
      case '\n':
        out->append("\\n");
        continue;
      case '\r':
        out->append("\\r");
        continue;
      case '\t':
        out->append("\\t");
        continue;
      case '\b':
        out->append("\\b");
        continue;
      case '\f':
        out->append("\\f");
        continue;
      default:
        break;
    }
    char buf[16];
    if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out->append(buf);
    } else if (c < 0x80 || !ensure_ascii) {
      out->append(s.data() + start, pos - start);
    } else if (c < 0x10000) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out->append(buf);
    } else {
      const char32_t v = c - 0x10000;
      std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                    static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      out->append(buf);
    }
  }
  out->push_back('"');
}

std::string JsonFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return FloatRepr(d);
}

class Dumper {
 public:
  Dumper(const JsonDumpsOptions& options, size_t max_bytes)
      : options_(options), max_bytes_(max_bytes) {}

  absl::Status Dump(const Value& v, int level) {
    if (out_.size() > max_bytes_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("tojson output exceeds the limit of ", max_bytes_, " bytes"));
    }
    switch (v.kind()) {
      case Kind::kNone:
        out_.append("null");
        return absl::OkStatus();
      case Kind::kBool:
        out_.append(v.bool_value() ? "true" : "false");
        return absl::OkStatus();
      case Kind::kInt:
        absl::StrAppend(&out_, v.int_value());
        return absl::OkStatus();
      case Kind::kFloat:
        out_.append(JsonFloat(v.float_value()));
        return absl::OkStatus();
      case Kind::kString:
        AppendJsonString(v.str(), options_.ensure_ascii, &out_);
        return absl::OkStatus();
      case Kind::kList:
        if (v.seq_kind() == SeqKind::kList || v.seq_kind() == SeqKind::kTuple) {
          return DumpList(v.items(), level);
        }
        break;
      case Kind::kDict:
        return DumpDict(v.dict(), level);
      default:
        break;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("Object of type ", TypeName(v), " is not JSON serializable"));
  }

  std::string Take() { return std::move(out_); }

 private:
  void Open(char bracket, int level) {
    out_.push_back(bracket);
    if (options_.indent) NewLine(level + 1);
  }

  void Close(char bracket, int level) {
    if (options_.indent) NewLine(level);
    out_.push_back(bracket);
  }

  void Separate(int level) {
    out_.append(options_.item_separator);
    if (options_.indent) NewLine(level + 1);
  }

  void NewLine(int level) {
    out_.push_back('\n');
    for (int i = 0; i < level && out_.size() <= max_bytes_; ++i) out_.append(*options_.indent);
  }

  absl::Status DumpList(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out_.append("[]");
      return absl::OkStatus();
    }
    Open('[', level);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) Separate(level);
      absl::Status s = Dump(items[i], level + 1);
      if (!s.ok()) return s;
    }
    Close(']', level);
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> KeyText(const Value& key) {
    switch (key.kind()) {
      case Kind::kString:
        return key.str();
      case Kind::kNone:
        return std::string("null");
      case Kind::kBool:
        return std::string(key.bool_value() ? "true" : "false");
      case Kind::kInt:
        return absl::StrCat(key.int_value());
      case Kind::kFloat:
        return JsonFloat(key.float_value());
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            "keys must be str, int, float, bool or None, not ", TypeName(key)));
    }
  }

  absl::Status DumpDict(const Dict& dict, int level) {
    if (dict.empty()) {
      out_.append("{}");
      return absl::OkStatus();
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& entry : dict.entries()) entries.push_back(&entry);
    if (options_.sort_keys) {
      absl::Status error;
      std::stable_sort(entries.begin(), entries.end(), [&](const auto* a, const auto* b) {
        absl::StatusOr<int> c = Compare(a->first, b->first, "<");
        if (!c.ok()) {
          if (error.ok()) error = c.status();
          return false;
        }
        return *c < 0;
      });
      if (!error.ok()) return error;
    }
    Open('{', level);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) Separate(level);
      absl::StatusOr<std::string> key = KeyText(entries[i]->first);
      if (!key.ok()) return key.status();
      AppendJsonString(*key, options_.ensure_ascii, &out_);
      out_.append(options_.key_separator);
      absl::Status s = Dump(entries[i]->second, level + 1);
      if (!s.ok()) return s;
    }
    Close('}', level);
    return absl::OkStatus();
  }

  const JsonDumpsOptions& options_;
  const size_t max_bytes_;
  std::string out_;
};

}  // namespace

absl::StatusOr<Value> FromJson(const nlohmann::json& json) { return FromJsonAt(json, 0); }
absl::StatusOr<Value> FromJson(const nlohmann::ordered_json& json) { return FromJsonAt(json, 0); }

absl::StatusOr<nlohmann::ordered_json> ToJson(const Value& v) {
  switch (v.kind()) {
    case Kind::kNone:
      return nlohmann::ordered_json(nullptr);
    case Kind::kBool:
      return nlohmann::ordered_json(v.bool_value());
    case Kind::kInt:
      return nlohmann::ordered_json(v.int_value());
    case Kind::kFloat:
      return nlohmann::ordered_json(v.float_value());
    case Kind::kString:
      return nlohmann::ordered_json(v.str());
    case Kind::kList: {
      if (v.seq_kind() == SeqKind::kIterator) break;
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const Value& item : v.items()) {
        absl::StatusOr<nlohmann::ordered_json> j = ToJson(item);
        if (!j.ok()) return j.status();
        out.push_back(*std::move(j));
      }
      return out;
    }
    case Kind::kDict: {
      nlohmann::ordered_json out = nlohmann::ordered_json::object();
      for (const auto& [k, item] : v.dict().entries()) {
        if (!k.is_string()) {
          return absl::InvalidArgumentError(
              absl::StrCat("a ", TypeName(k), " dict key has no JSON form"));
        }
        absl::StatusOr<nlohmann::ordered_json> j = ToJson(item);
        if (!j.ok()) return j.status();
        out[k.str()] = *std::move(j);
      }
      return out;
    }
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("a ", TypeName(v), " has no JSON form"));
}

absl::StatusOr<std::string> JsonDumps(const Value& v, const JsonDumpsOptions& options,
                                      size_t max_bytes) {
  Dumper dumper(options, max_bytes);
  absl::Status s = dumper.Dump(v, 0);
  if (!s.ok()) return s;
  std::string out = dumper.Take();
  if (out.size() > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("tojson output exceeds the limit of ", max_bytes, " bytes"));
  }
  return out;
}

}  // namespace kiln::models::jinja
