#include "models/chat/jinja_strftime.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace kiln::models::jinja {
namespace {

constexpr const char* kDays[] = {"Sunday", "Monday", "Tuesday", "Wednesday",
                                 "Thursday", "Friday", "Saturday"};
constexpr const char* kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                   "July",    "August",   "September", "October", "November", "December"};

struct Fields {
  int64_t year;
  int month, day, hour, minute, second, microsecond;
  int wday;  // 0 = Sunday
  int yday;  // 0-based
  int64_t unix_seconds;
};

// ISO 8601 week-based year and week.
void IsoWeek(const Fields& f, int64_t* iso_year, int* week) {
  const int wday_mon = (f.wday + 6) % 7;  // 0 = Monday
  int w = (f.yday - wday_mon + 10) / 7;
  *iso_year = f.year;
  const auto weeks_in = [](int64_t y) {
    const auto p = [](int64_t x) { return (x + x / 4 - x / 100 + x / 400) % 7; };
    return (p(y) == 4 || p(y - 1) == 3) ? 53 : 52;
  };
  if (w < 1) {
    *iso_year = f.year - 1;
    w = weeks_in(*iso_year);
  } else if (w > weeks_in(f.year)) {
    *iso_year = f.year + 1;
    w = 1;
  }
  *week = w;
}

std::string Number(int64_t v, int width, char pad) {
  std::string digits = absl::StrCat(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  if (pad != '-') {
    while (static_cast<int>(digits.size()) < width) digits.insert(digits.begin(), pad);
  }
  return out + digits;
}

void Convert(char c, char flag, const Fields& f, std::string* out);

std::string Expand(absl::string_view format, const Fields& f) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) {
      out.push_back(format[i]);
      continue;
    }
    size_t j = i + 1;
    char flag = 0;
    if (format[j] == '-' || format[j] == '_' || format[j] == '0' || format[j] == '^') {
      flag = format[j++];
    }
    size_t width = 0;
    while (j < format.size() && format[j] >= '0' && format[j] <= '9') {
      width = std::min<size_t>(width * 10 + static_cast<size_t>(format[j++] - '0'), 1024);
    }
    if (j >= format.size()) {
      out.append(format.data() + i, format.size() - i);
      break;
    }
    std::string piece;
    Convert(format[j], flag, f, &piece);
    if (piece == "\x01") {
      piece = std::string(format.substr(i, j - i + 1));  // unknown: kept
    } else {
      if (flag == '^') {
        for (char& ch : piece) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      }
      // glibc's field width: numbers pad with zeros, words with spaces.
      if (piece.size() < width && flag != '-') {
        const bool numeric = !piece.empty() && std::isdigit(static_cast<unsigned char>(piece.back()));
        const char pad = flag == '_' ? ' ' : (flag == '0' || numeric) ? '0' : ' ';
        const bool negative = !piece.empty() && piece[0] == '-';
        piece.insert(negative ? 1 : 0, width - piece.size(), pad);
      }
    }
    out += piece;
    i = j;
  }
  return out;
}

void Convert(char c, char flag, const Fields& f, std::string* out) {
  const auto num = [&](int64_t v, int width, char default_pad = '0') {
    const char pad = flag == '-' ? '-' : flag == '_' ? ' ' : flag == '0' ? '0' : default_pad;
    *out = Number(v, width, pad);
  };
  const int hour12 = f.hour % 12 == 0 ? 12 : f.hour % 12;
  switch (c) {
    case 'a':
      *out = std::string(kDays[f.wday]).substr(0, 3);
      return;
    case 'A':
      *out = kDays[f.wday];
      return;
    case 'b':
    case 'h':
      *out = std::string(kMonths[f.month - 1]).substr(0, 3);
      return;
    case 'B':
      *out = kMonths[f.month - 1];
      return;
    case 'c':
      *out = Expand("%a %b %e %H:%M:%S %Y", f);
      return;
    case 'C':
      return num(f.year / 100, 2);
    case 'd':
      return num(f.day, 2);
    case 'e':
      return num(f.day, 2, ' ');
    case 'D':
    case 'x':
      *out = Expand("%m/%d/%y", f);
      return;
    case 'F':
      *out = Expand("%Y-%m-%d", f);
      return;
    case 'f':
      return num(f.microsecond, 6);
    case 'G':
    case 'g':
    case 'V': {
      int64_t iso_year;
      int week;
      IsoWeek(f, &iso_year, &week);
      if (c == 'G') return num(iso_year, 1);
      if (c == 'g') return num(iso_year % 100, 2);
      return num(week, 2);
    }
    case 'H':
      return num(f.hour, 2);
    case 'I':
      return num(hour12, 2);
    case 'j':
      return num(f.yday + 1, 3);
    case 'm':
      return num(f.month, 2);
    case 'M':
      return num(f.minute, 2);
    case 'n':
      *out = "\n";
      return;
    case 'p':
      *out = f.hour < 12 ? "AM" : "PM";
      return;
    case 'P':
      *out = f.hour < 12 ? "am" : "pm";
      return;
    case 'r':
      *out = Expand("%I:%M:%S %p", f);
      return;
    case 'R':
      *out = Expand("%H:%M", f);
      return;
    case 's':
      return num(f.unix_seconds, 1);
    case 'S':
      return num(f.second, 2);
    case 't':
      *out = "\t";
      return;
    case 'T':
    case 'X':
      *out = Expand("%H:%M:%S", f);
      return;
    case 'u':
      return num(f.wday == 0 ? 7 : f.wday, 1);
    case 'U':
      return num((f.yday + 7 - f.wday) / 7, 2);
    case 'w':
      return num(f.wday, 1);
    case 'W':
      return num((f.yday + 7 - (f.wday + 6) % 7) / 7, 2);
    case 'y':
      return num(f.year % 100, 2);
    case 'Y':
      return num(f.year, 1);
    case 'z':
    case 'Z':
      out->clear();  // a naive datetime has no zone
      return;
    case '%':
      *out = "%";
      return;
    default:
      *out = "\x01";
  }
}

}  // namespace

std::string PyStrftime(absl::string_view format, absl::Time t, absl::TimeZone zone) {
  const absl::TimeZone::CivilInfo info = zone.At(t);
  const absl::CivilDay day(info.cs);
  Fields f;
  f.year = info.cs.year();
  f.month = info.cs.month();
  f.day = info.cs.day();
  f.hour = info.cs.hour();
  f.minute = info.cs.minute();
  f.second = info.cs.second();
  f.microsecond = static_cast<int>(absl::ToInt64Microseconds(info.subsecond));
  // absl counts weekdays from Monday.
  f.wday = (static_cast<int>(absl::GetWeekday(day)) + 1) % 7;
  f.yday = absl::GetYearDay(day) - 1;
  f.unix_seconds = absl::ToUnixSeconds(t);
  return Expand(format, f);
}

}  // namespace kiln::models::jinja
