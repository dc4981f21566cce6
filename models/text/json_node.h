// A value inside a tokenizer.json together with where it sits, so that every
// error names the file and the JSON path ("tokenizer.json:
// pre_tokenizer.pretokenizers[1].type ...") and every read checks the type.
#ifndef KILN_MODELS_TEXT_JSON_NODE_H_
#define KILN_MODELS_TEXT_JSON_NODE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace kiln::models {

class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, std::string path, const std::string* source)
      : value_(&value), path_(std::move(path)), source_(source) {}

  const nlohmann::json& value() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }

  // A field that is absent or null counts as missing.
  bool Has(const char* key) const;
  // Check Has(key) first; a missing key gives a null node.
  JsonNode Field(const char* key) const;
  JsonNode Element(size_t index) const;
  // The path of a member given by a runtime key ("model.vocab[\"abc\"]").
  JsonNode Member(const std::string& key, const nlohmann::json& value) const;

  // InvalidArgument "<source>: <path> <what>".
  absl::Status Invalid(absl::string_view what) const;
  // Unimplemented "<source>: <path> <what>".
  absl::Status Unsupported(absl::string_view what) const;

  // Typed reads of this node.
  absl::StatusOr<std::string> AsString() const;
  absl::StatusOr<bool> AsBool() const;
  // An unsigned integer at most `max`.
  absl::StatusOr<uint64_t> AsUint(uint64_t max) const;
  // Whether `value` is an integer in [0, max] (a json built in memory holds
  // small positive numbers as signed), and that number in *out.
  static bool IsUint(const nlohmann::json& value, uint64_t max, uint64_t* out);
  // A string of exactly one character (Rust's char).
  absl::StatusOr<std::string> AsChar() const;
  absl::Status ExpectObject() const;
  absl::Status ExpectArray() const;

  // Typed reads of a field: required, or with a fallback when missing.
  absl::StatusOr<std::string> String(const char* key) const;
  absl::StatusOr<std::string> String(const char* key, absl::string_view fallback) const;
  absl::StatusOr<bool> Bool(const char* key, bool fallback) const;
  absl::StatusOr<uint64_t> Uint(const char* key, uint64_t fallback, uint64_t max) const;
  // The "type" field of a component, required to be a string.
  absl::StatusOr<std::string> Type() const;
  // Unimplemented naming this component's type, for a type kiln lacks.
  absl::Status UnsupportedType(const std::string& type) const;

 private:
  const nlohmann::json* value_;
  std::string path_;
  const std::string* source_;
};

// The components a Sequence lists under `field` (a JSON array), each read by
// `parse` (a JsonNode -> StatusOr<unique_ptr<T>>); null entries (nullptr)
// are left out. The first error is returned.
template <typename T, typename Parse>
absl::StatusOr<std::vector<std::unique_ptr<T>>> ParseComponents(const JsonNode& node,
                                                                const char* field, Parse parse) {
  const JsonNode list = node.Field(field);
  if (absl::Status s = list.ExpectArray(); !s.ok()) return s;
  std::vector<std::unique_ptr<T>> parts;
  for (size_t i = 0; i < list.value().size(); ++i) {
    absl::StatusOr<std::unique_ptr<T>> part = parse(list.Element(i));
    if (!part.ok()) return part.status();
    if (*part != nullptr) parts.push_back(*std::move(part));
  }
  return parts;
}

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_JSON_NODE_H_
