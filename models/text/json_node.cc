#include "models/text/json_node.h"

#include "absl/strings/str_cat.h"
#include "models/text/unicode_chars.h"

namespace kiln::models {
namespace {

const nlohmann::json& Null() {
  static const nlohmann::json* const null = new nlohmann::json();
  return *null;
}

// A value as an error message shows it: JSON text, cut short when long.
std::string Shown(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 60) text = absl::StrCat(text.substr(0, 57), "...");
  return text;
}

std::string Joined(const std::string& path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

}  // namespace

bool JsonNode::Has(const char* key) const {
  if (!value_->is_object()) return false;
  const auto it = value_->find(key);
  return it != value_->end() && !it->is_null();
}

JsonNode JsonNode::Field(const char* key) const {
  const nlohmann::json* child = &Null();
  if (value_->is_object()) {
    const auto it = value_->find(key);
    if (it != value_->end()) child = &*it;
  }
  return JsonNode(*child, Joined(path_, key), source_);
}

JsonNode JsonNode::Element(size_t index) const {
  const nlohmann::json* child = &Null();
  if (value_->is_array() && index < value_->size()) child = &(*value_)[index];
  return JsonNode(*child, absl::StrCat(path_, "[", index, "]"), source_);
}

JsonNode JsonNode::Member(const std::string& key, const nlohmann::json& value) const {
  return JsonNode(value, absl::StrCat(path_, "[", Shown(nlohmann::json(key)), "]"), source_);
}

absl::Status JsonNode::Invalid(absl::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat(*source_, ": ", path_.empty() ? "the root" : path_, " ", what));
}

absl::Status JsonNode::Unsupported(absl::string_view what) const {
  return absl::UnimplementedError(
      absl::StrCat(*source_, ": ", path_.empty() ? "the root" : path_, " ", what));
}

absl::StatusOr<std::string> JsonNode::AsString() const {
  if (!value_->is_string()) return Invalid(absl::StrCat("is ", Shown(*value_), ", not a string"));
  const std::string& text = value_->get_ref<const std::string&>();
  // A json built in memory (FromJson) may hold bytes a parsed file cannot.
  if (!IsValidUtf8(text)) return Invalid("is not valid UTF-8");
  return text;
}

absl::StatusOr<bool> JsonNode::AsBool() const {
  if (!value_->is_boolean()) return Invalid(absl::StrCat("is ", Shown(*value_), ", not true or false"));
  return value_->get<bool>();
}

bool JsonNode::IsUint(const nlohmann::json& value, uint64_t max, uint64_t* out) {
  if (value.is_number_unsigned()) {
    *out = value.get<uint64_t>();
  } else if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(value.get<int64_t>());
  } else {
    return false;
  }
  return *out <= max;
}

absl::StatusOr<uint64_t> JsonNode::AsUint(uint64_t max) const {
  uint64_t n = 0;
  if (!IsUint(*value_, max, &n)) {
    return Invalid(absl::StrCat("is ", Shown(*value_), ", not an integer in [0, ", max, "]"));
  }
  return n;
}

absl::StatusOr<std::string> JsonNode::AsChar() const {
  absl::StatusOr<std::string> text = AsString();
  if (!text.ok()) return text.status();
  size_t length = 0;
  if (text->empty() || DecodeUtf8At(*text, 0, &length) < 0 || length != text->size()) {
    return Invalid(absl::StrCat("is ", Shown(*value_), ", not a single character"));
  }
  return text;
}

absl::Status JsonNode::ExpectObject() const {
  if (!value_->is_object()) return Invalid(absl::StrCat("is ", Shown(*value_), ", not an object"));
  return absl::OkStatus();
}

absl::Status JsonNode::ExpectArray() const {
  if (!value_->is_array()) return Invalid(absl::StrCat("is ", Shown(*value_), ", not an array"));
  return absl::OkStatus();
}

absl::StatusOr<std::string> JsonNode::String(const char* key) const {
  if (!Has(key)) return Field(key).Invalid("is missing");
  return Field(key).AsString();
}

absl::StatusOr<std::string> JsonNode::String(const char* key, absl::string_view fallback) const {
  if (!Has(key)) return std::string(fallback);
  return Field(key).AsString();
}

absl::StatusOr<bool> JsonNode::Bool(const char* key, bool fallback) const {
  if (!Has(key)) return fallback;
  return Field(key).AsBool();
}

absl::StatusOr<uint64_t> JsonNode::Uint(const char* key, uint64_t fallback, uint64_t max) const {
  if (!Has(key)) return fallback;
  return Field(key).AsUint(max);
}

absl::StatusOr<std::string> JsonNode::Type() const {
  if (absl::Status s = ExpectObject(); !s.ok()) return s;
  return String("type");
}

absl::Status JsonNode::UnsupportedType(const std::string& type) const {
  return Field("type").Unsupported(absl::StrCat(Shown(nlohmann::json(type)), " is not supported"));
}

}  // namespace kiln::models
