// libsentencepiece behind an interface of standard types only. Its header
// declares `absl::string_view` as std::string_view, which clashes with
// abseil's own, so it is included in sentencepiece_shim.cc alone, which
// includes no abseil header.
#ifndef KILN_MODELS_TEXT_SENTENCEPIECE_SHIM_H_
#define KILN_MODELS_TEXT_SENTENCEPIECE_SHIM_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::models::spm {

class Processor {
 public:
  Processor();
  ~Processor();
  Processor(const Processor&) = delete;
  Processor& operator=(const Processor&) = delete;

  // Each returns "" on success, else sentencepiece's message.
  std::string LoadSerializedProto(std::string_view bytes);
  std::string Encode(std::string_view text, std::vector<int>* ids) const;
  int size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::models::spm

#endif  // KILN_MODELS_TEXT_SENTENCEPIECE_SHIM_H_
