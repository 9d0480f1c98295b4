// Batch encoding shared with src/native/label-index.ts. Each op is a run of uint32 words:
//   UpsertParent   id nLabels (key value)*nLabels
//   DeleteParent   id
//   UpsertItem     id nLabels nParents (key value)*nLabels parent*nParents
//   DeleteItem     id
//   UpsertSelector id selectorIndex   (index into the batch's selector array)
//   DeleteSelector id
// key/value are the caller's string IDs: dense, assigned in order, each sent once as text.
#pragma once

#include <cstdint>

namespace palisade::labelindex::ops {

enum : uint32_t {
  kUpsertParent = 1,
  kDeleteParent = 2,
  kUpsertItem = 3,
  kDeleteItem = 4,
  kUpsertSelector = 5,
  kDeleteSelector = 6,
};

}  // namespace palisade::labelindex::ops
