#include "models/text/sentencepiece_shim.h"

#include <sentencepiece_processor.h>

#include <exception>

namespace kiln::models::spm {

struct Processor::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

Processor::Processor() : impl_(std::make_unique<Impl>()) {}
Processor::~Processor() = default;

// libsentencepiece reports most problems as a Status, but its trie builder
// throws on some malformed models; neither may escape as a crash.
std::string Processor::LoadSerializedProto(std::string_view bytes) {
  try {
    const sentencepiece::util::Status s = impl_->processor.LoadFromSerializedProto(bytes);
    return s.ok() ? std::string() : std::string(s.error_message());
  } catch (const std::exception& e) {
    return std::string("the model cannot be loaded: ") + e.what();
  } catch (...) {
    return "the model cannot be loaded";
  }
}

std::string Processor::Encode(std::string_view text, std::vector<int>* ids) const {
  try {
    const sentencepiece::util::Status s = impl_->processor.Encode(text, ids);
    return s.ok() ? std::string() : std::string(s.error_message());
  } catch (const std::exception& e) {
    return std::string("encoding failed: ") + e.what();
  } catch (...) {
    return "encoding failed";
  }
}

int Processor::size() const { return impl_->processor.GetPieceSize(); }

}  // namespace kiln::models::spm
