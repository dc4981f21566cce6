// Test helper: a spread of the schedule variants of a found candidate (the
// tile sizes and loop splits the search chooses among), so that tests cover
// more of what the code generator can be asked for than the one schedule
// the cost model picks.
#ifndef KILN_TESTS_OPTIMIZER_SEARCH_SCHEDULE_SPREAD_H_
#define KILN_TESTS_OPTIMIZER_SEARCH_SCHEDULE_SPREAD_H_

#include <vector>

#include "optimizer/search/enumerate.h"

namespace kiln::search {

// `chosen` first, then `count` of the variants ScheduleVariants lists,
// picked at the fractional parts of i times the golden ratio: spread over
// the list and out of step with its nested periods (deterministic).
inline std::vector<Schedule> ScheduleSpread(const Region& region, const Schedule& chosen, size_t count) {
  const std::vector<Schedule> all = ScheduleVariants(region, chosen);
  std::vector<Schedule> out = {chosen};
  for (size_t i = 1; i <= count && i <= all.size(); ++i) {
    const double at = static_cast<double>(i) * 0.6180339887;
    out.push_back(all[static_cast<size_t>((at - static_cast<double>(static_cast<size_t>(at))) * all.size())]);
  }
  return out;
}

}  // namespace kiln::search

#endif  // KILN_TESTS_OPTIMIZER_SEARCH_SCHEDULE_SPREAD_H_
