// Measuring what a model version takes (--model-memory-budget): the
// process's heap bytes in use, sampled before and after a load, and the
// bytes of the version's files. residency_policy.h's Footprint combines
// them.
//
// Why heap bytes and not resident set size: freed memory stays with the
// allocator, so after an eviction a reload reuses it and the RSS barely
// moves; the allocator's in-use count goes up by what the load keeps
// whatever pages it reuses. Concurrent requests' allocations add noise of
// their own size (small next to a model).
//
// Thread-safe (reads process-wide counters and the file system).
#pragma once

#include <cstdint>
#include <string>

namespace inferd {

// The allocator's bytes in use (arenas and mmapped chunks), or -1 where the
// C library cannot say.
int64_t HeapBytesInUse();

// The bytes of the regular files under `directory` (recursively, following
// nothing outside it); 0 when it cannot be read.
uint64_t DirectoryBytes(const std::string& directory);

}  // namespace inferd
