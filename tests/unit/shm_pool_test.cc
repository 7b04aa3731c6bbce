// ShmPool's shared-memory object: a stale object of the same name (a
// restarted container's pid 1 finds its predecessor's in the pod's /dev/shm)
// is replaced instead of failing the gateway's start; the object is gone once
// the pool is.
#include "middleman/shm_pool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "middleman/inferd_pool.h"

namespace inferd::middleman {
namespace {

std::string ObjectName(int n) {
  return "/inferd-mm-" + std::to_string(getpid()) + "-" + std::to_string(n);
}

bool Exists(const std::string& name) {
  struct stat st;
  return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

TEST(ShmPool, ReplacesAStaleObjectOfItsName) {
  // Every name this process's next pools can take, made stale (one byte each).
  constexpr int kNames = 64;
  for (int n = 0; n < kNames; ++n) {
    const int fd = shm_open(ObjectName(n).c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 1), 0);
    close(fd);
  }
  InferdPool inferd({.url = "127.0.0.1:1", .channels = 1}, nullptr);
  std::string key;
  {
    auto pool = ShmPool::Create({.slots = 2, .slot_bytes = 4096}, inferd, nullptr);
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    // The object it made is its own size, not the stale one's.
    for (int n = 0; n < kNames; ++n) {
      struct stat st;
      if (stat(("/dev/shm" + ObjectName(n)).c_str(), &st) == 0 && st.st_size == 2 * 4096) {
        key = ObjectName(n);
      }
    }
    ASSERT_FALSE(key.empty());
  }
  EXPECT_FALSE(Exists(key)) << "the pool unlinks its object";
  for (int n = 0; n < kNames; ++n) shm_unlink(ObjectName(n).c_str());
}

}  // namespace
}  // namespace inferd::middleman
