#include "repository/model_footprint.h"

#include <malloc.h>

#include <filesystem>

namespace inferd {

int64_t HeapBytesInUse() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
#else
  return -1;
#endif
}

uint64_t DirectoryBytes(const std::string& directory) {
  namespace fs = std::filesystem;
  std::error_code ec;
  uint64_t total = 0;
  fs::recursive_directory_iterator it(directory, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    const auto size = it->file_size(size_ec);
    if (!size_ec) total += size;
  }
  return total;
}

}  // namespace inferd
