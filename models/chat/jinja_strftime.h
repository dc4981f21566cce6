// Python's datetime.strftime for a naive local datetime, as transformers'
// strftime_now() calls it: glibc's conversions in the C locale (%a %A %b %B
// %c %C %d %D %e %F %g %G %h %H %I %j %m %M %n %p %r %R %s %S %t %T %u %U
// %V %w %W %x %X %y %Y %%, with glibc's - _ 0 ^ flags), Python's %f, and
// empty %z/%Z (a naive datetime has no zone). Unknown conversions are kept
// as written, as glibc does.
#ifndef KILN_MODELS_CHAT_JINJA_STRFTIME_H_
#define KILN_MODELS_CHAT_JINJA_STRFTIME_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/time/time.h"

namespace kiln::models::jinja {

std::string PyStrftime(absl::string_view format, absl::Time t, absl::TimeZone zone);

}  // namespace kiln::models::jinja

#endif  // KILN_MODELS_CHAT_JINJA_STRFTIME_H_
