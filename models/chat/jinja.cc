#include "models/chat/jinja.h"

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_lexer.h"
#include "models/chat/jinja_parser.h"
#include "models/chat/jinja_renderer.h"

namespace kiln::models::jinja {

struct Template::Impl {
  explicit Impl(std::string normalized) : source(std::move(normalized)), map(source) {}
  const std::string source;
  const SourceMap map;  // views `source`
  Body body;
};

absl::StatusOr<Template> Template::Parse(absl::string_view source) {
  if (source.size() > kMaxTemplateBytes) {
    return absl::InvalidArgumentError(absl::StrCat("jinja: the template is ", source.size(),
                                                   " bytes; the limit is ", kMaxTemplateBytes));
  }
  auto impl = std::make_shared<Impl>(NormalizeSource(source));
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(impl->source);
  if (!tokens.ok()) return tokens.status();
  absl::StatusOr<Body> body = ParseTokens(*tokens, impl->map);
  if (!body.ok()) return body.status();
  impl->body = *std::move(body);
  return Template(std::move(impl));
}

absl::StatusOr<std::string> Template::Render(const Value& context, const RenderOptions& options) const {
  static const Dict* const kEmpty = new Dict();
  if (!context.is_dict() && !context.is_undefined() && !context.is_none()) {
    return absl::InvalidArgumentError(
        absl::StrCat("jinja: the render context must be a dict, not ", TypeName(context)));
  }
  Renderer renderer(impl_->map, context.is_dict() ? context.dict() : *kEmpty, options);
  return renderer.Render(impl_->body);
}

}  // namespace kiln::models::jinja
