#include "models/text/spm_model.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::models {
namespace {

// Field numbers of sentencepiece_model.proto.
namespace field {
constexpr uint32_t kPieces = 1, kTrainerSpec = 2, kNormalizerSpec = 3;
constexpr uint32_t kPieceText = 1, kPieceScore = 2, kPieceType = 3;
constexpr uint32_t kModelType = 3, kVocabSize = 4, kTreatWhitespaceAsSuffix = 24,
                   kByteFallback = 35, kUnkId = 40, kBosId = 41, kEosId = 42, kPadId = 43;
constexpr uint32_t kNormName = 1, kAddDummyPrefix = 3, kRemoveExtraWhitespaces = 4,
                   kEscapeWhitespaces = 5;
}  // namespace field

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

// One field of a message: its number, wire type and value (the integer of a
// varint or fixed field, the bytes of a length-delimited one).
struct Field {
  uint32_t number;
  uint32_t wire;
  uint64_t integer = 0;
  absl::string_view bytes;
};

class Reader {
 public:
  Reader(absl::string_view bytes, absl::string_view source, absl::string_view where)
      : bytes_(bytes), source_(source), where_(where) {}

  bool done() const { return pos_ >= bytes_.size(); }

  absl::StatusOr<Field> Next() {
    absl::StatusOr<uint64_t> key = Varint();
    if (!key.ok()) return key.status();
    Field f;
    f.number = static_cast<uint32_t>(*key >> 3);
    f.wire = static_cast<uint32_t>(*key & 7);
    if (f.number == 0 || *key >> 32 != 0) return Bad("a field number of 0 or out of range");
    switch (f.wire) {
      case kVarint: {
        absl::StatusOr<uint64_t> v = Varint();
        if (!v.ok()) return v.status();
        f.integer = *v;
        break;
      }
      case kFixed64:
      case kFixed32: {
        const size_t n = f.wire == kFixed64 ? 8 : 4;
        if (bytes_.size() - pos_ < n) return Bad("a fixed-size field past the end");
        std::memcpy(&f.integer, bytes_.data() + pos_, n);  // little-endian host
        pos_ += n;
        break;
      }
      case kLength: {
        absl::StatusOr<uint64_t> n = Varint();
        if (!n.ok()) return n.status();
        if (*n > bytes_.size() - pos_) return Bad("a length past the end of the data");
        f.bytes = bytes_.substr(pos_, *n);
        pos_ += *n;
        break;
      }
      default:
        return Bad(absl::StrCat("wire type ", f.wire, " (field ", f.number, ")"));
    }
    return f;
  }

  absl::Status Bad(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": not a SentencePiece model: ",
                                                   what, " in ", where_, " at byte ", pos_));
  }

 private:
  absl::StatusOr<uint64_t> Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return Bad("a truncated varint");
      const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      value |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return value;
    }
    return Bad("a varint longer than 10 bytes");
  }

  absl::string_view bytes_;
  absl::string_view source_;
  absl::string_view where_;
  size_t pos_ = 0;
};

absl::Status ParsePiece(absl::string_view bytes, absl::string_view source, size_t index,
                        SpmModel::Piece* piece) {
  const std::string where = absl::StrCat("piece ", index);
  Reader r(bytes, source, where);
  while (!r.done()) {
    absl::StatusOr<Field> f = r.Next();
    if (!f.ok()) return f.status();
    if (f->number == field::kPieceText && f->wire == kLength) {
      piece->text = std::string(f->bytes);
    } else if (f->number == field::kPieceScore && f->wire == kFixed32) {
      const uint32_t bits = static_cast<uint32_t>(f->integer);
      std::memcpy(&piece->score, &bits, sizeof(bits));
    } else if (f->number == field::kPieceType && f->wire == kVarint) {
      if (f->integer < 1 || f->integer > 6) return r.Bad(absl::StrCat("piece type ", f->integer));
      piece->type = static_cast<SpmModel::PieceType>(f->integer);
    }
  }
  return absl::OkStatus();
}

// An int32 field: protobuf writes negative values as 10-byte varints.
int32_t AsInt32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

absl::Status ParseTrainerSpec(absl::string_view bytes, absl::string_view source, SpmModel* m) {
  Reader r(bytes, source, "trainer_spec");
  while (!r.done()) {
    absl::StatusOr<Field> f = r.Next();
    if (!f.ok()) return f.status();
    if (f->wire != kVarint) continue;
    switch (f->number) {
      case field::kModelType:
        if (f->integer < 1 || f->integer > 4) return r.Bad(absl::StrCat("model type ", f->integer));
        m->model_type = static_cast<SpmModel::ModelType>(f->integer);
        break;
      case field::kByteFallback: m->byte_fallback = f->integer != 0; break;
      case field::kTreatWhitespaceAsSuffix: m->treat_whitespace_as_suffix = f->integer != 0; break;
      case field::kUnkId: m->unk_id = AsInt32(f->integer); break;
      case field::kBosId: m->bos_id = AsInt32(f->integer); break;
      case field::kEosId: m->eos_id = AsInt32(f->integer); break;
      case field::kPadId: m->pad_id = AsInt32(f->integer); break;
      default: break;
    }
  }
  return absl::OkStatus();
}

absl::Status ParseNormalizerSpec(absl::string_view bytes, absl::string_view source, SpmModel* m) {
  Reader r(bytes, source, "normalizer_spec");
  while (!r.done()) {
    absl::StatusOr<Field> f = r.Next();
    if (!f.ok()) return f.status();
    if (f->number == field::kNormName && f->wire == kLength) {
      m->normalizer_name = std::string(f->bytes);
    } else if (f->wire == kVarint) {
      if (f->number == field::kAddDummyPrefix) m->add_dummy_prefix = f->integer != 0;
      if (f->number == field::kRemoveExtraWhitespaces) m->remove_extra_whitespaces = f->integer != 0;
      if (f->number == field::kEscapeWhitespaces) m->escape_whitespaces = f->integer != 0;
    }
  }
  return absl::OkStatus();
}

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutKey(uint32_t number, WireType wire, std::string* out) {
  PutVarint((static_cast<uint64_t>(number) << 3) | wire, out);
}
void PutInt(uint32_t number, int64_t v, std::string* out) {
  PutKey(number, kVarint, out);
  PutVarint(static_cast<uint64_t>(v), out);
}
void PutBytes(uint32_t number, absl::string_view bytes, std::string* out) {
  PutKey(number, kLength, out);
  PutVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}

}  // namespace

absl::StatusOr<SpmModel> ParseSpmModel(absl::string_view bytes, absl::string_view source) {
  SpmModel m;
  Reader r(bytes, source, "the model");
  while (!r.done()) {
    absl::StatusOr<Field> f = r.Next();
    if (!f.ok()) return f.status();
    if (f->wire != kLength) continue;
    absl::Status s;
    if (f->number == field::kPieces) {
      m.pieces.emplace_back();
      s = ParsePiece(f->bytes, source, m.pieces.size() - 1, &m.pieces.back());
    } else if (f->number == field::kTrainerSpec) {
      s = ParseTrainerSpec(f->bytes, source, &m);
    } else if (f->number == field::kNormalizerSpec) {
      s = ParseNormalizerSpec(f->bytes, source, &m);
    }
    if (!s.ok()) return s;
  }
  if (m.pieces.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not a SentencePiece model: no pieces"));
  }
  // libsentencepiece's trie cannot hold an empty piece (and would throw).
  for (size_t i = 0; i < m.pieces.size(); ++i) {
    if (m.pieces[i].text.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": SentencePiece piece ", i, " is empty"));
    }
  }
  const int64_t n = static_cast<int64_t>(m.pieces.size());
  for (const auto& [name, id] : {std::pair<const char*, int32_t>{"unk_id", m.unk_id},
                                 {"bos_id", m.bos_id}, {"eos_id", m.eos_id}, {"pad_id", m.pad_id}}) {
    if (id < -1 || id >= n) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": SentencePiece trainer_spec.", name,
                                                     " ", id, " is outside the ", n, " pieces"));
    }
  }
  return m;
}

std::string SerializeSpmModel(const SpmModel& m) {
  std::string out;
  for (const SpmModel::Piece& p : m.pieces) {
    std::string piece;
    PutBytes(field::kPieceText, p.text, &piece);
    PutKey(field::kPieceScore, kFixed32, &piece);
    uint32_t bits;
    std::memcpy(&bits, &p.score, sizeof(bits));
    for (int i = 0; i < 4; ++i) piece.push_back(static_cast<char>(bits >> (8 * i)));
    PutInt(field::kPieceType, static_cast<int>(p.type), &piece);
    PutBytes(field::kPieces, piece, &out);
  }
  std::string trainer;
  PutInt(field::kModelType, static_cast<int>(m.model_type), &trainer);
  PutInt(field::kVocabSize, static_cast<int64_t>(m.pieces.size()), &trainer);
  PutInt(field::kTreatWhitespaceAsSuffix, m.treat_whitespace_as_suffix, &trainer);
  PutInt(field::kByteFallback, m.byte_fallback, &trainer);
  PutInt(field::kUnkId, m.unk_id, &trainer);
  PutInt(field::kBosId, m.bos_id, &trainer);
  PutInt(field::kEosId, m.eos_id, &trainer);
  PutInt(field::kPadId, m.pad_id, &trainer);
  PutBytes(field::kTrainerSpec, trainer, &out);
  std::string normalizer;
  PutBytes(field::kNormName, m.normalizer_name.empty() ? "identity" : m.normalizer_name,
           &normalizer);
  PutInt(field::kAddDummyPrefix, m.add_dummy_prefix, &normalizer);
  PutInt(field::kRemoveExtraWhitespaces, m.remove_extra_whitespaces, &normalizer);
  PutInt(field::kEscapeWhitespaces, m.escape_whitespaces, &normalizer);
  PutBytes(field::kNormalizerSpec, normalizer, &out);
  return out;
}

}  // namespace kiln::models
