// memcpy with non-temporal stores: the destination's lines are written without first being read
// in (which a plain store does) and without evicting what the caches hold. For copies into
// outputs far larger than the caches, and into memory another core reads next (shared-memory
// rings), where a plain store would pull each line across from that core's cache and back.
// Ends with a store fence, so a release store after it publishes the copied bytes.
#pragma once

#include <cstddef>

namespace hoop {

void CopyStreaming(void* dst, const void* src, size_t bytes);

}  // namespace hoop
