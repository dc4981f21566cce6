#include "models/text/sentencepiece_shim.h"

#include <sentencepiece_processor.h>

namespace kiln::models::spm {

struct Processor::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

Processor::Processor() : impl_(std::make_unique<Impl>()) {}
Processor::~Processor() = default;

std::string Processor::LoadSerializedProto(std::string_view bytes) {
  const sentencepiece::util::Status s = impl_->processor.LoadFromSerializedProto(bytes);
  return s.ok() ? std::string() : std::string(s.error_message());
}

std::string Processor::Encode(std::string_view text, std::vector<int>* ids) const {
  const sentencepiece::util::Status s = impl_->processor.Encode(text, ids);
  return s.ok() ? std::string() : std::string(s.error_message());
}

int Processor::size() const { return impl_->processor.GetPieceSize(); }

}  // namespace kiln::models::spm
