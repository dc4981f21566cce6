// The schedules the search tries for a region: how each dim class maps onto
// a thread block (the grid, the for-loop, or read whole), and the tile
// sizes, loop splits and thread counts of each mapping.
#ifndef KILN_OPTIMIZER_SEARCH_SCHEDULES_H_
#define KILN_OPTIMIZER_SEARCH_SCHEDULES_H_

#include <vector>

#include "optimizer/search/candidate.h"
#include "optimizer/search/region.h"

namespace kiln::search {

// The ways to map classes: which reduced class the for-loop walks (or none)
// and how the output's classes spread over the grid; tile sizes are left at
// their first choice (see ScheduleVariants).
std::vector<Schedule> Mappings(const Region& region);
// The tile-size and loop-split variants of a mapping (and, for attention,
// thread-count ones), the mapping's own tiles first.
std::vector<Schedule> ScheduleVariants(const Region& region, const Schedule& mapping);

}  // namespace kiln::search

#endif  // KILN_OPTIMIZER_SEARCH_SCHEDULES_H_
