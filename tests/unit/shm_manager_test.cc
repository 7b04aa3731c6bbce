#include "shm/shm_manager.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace inferd {
namespace {

class ShmManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = "/inferd_unit_" + std::to_string(getpid());
    const int fd = shm_open(key_.c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 8192), 0);
    void* p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    ASSERT_NE(p, MAP_FAILED);
    client_ = static_cast<char*>(p);
  }
  void TearDown() override {
    munmap(client_, 8192);
    shm_unlink(key_.c_str());
  }
  std::string key_;
  char* client_ = nullptr;
  SharedMemoryManager shm_;
};

TEST_F(ShmManagerTest, RegisterReadWriteUnregister) {
  ASSERT_TRUE(shm_.Register("r", key_, 5000, 100).ok());
  auto region = shm_.Find("r");
  ASSERT_TRUE(region.ok());
  std::memcpy(client_ + 5000, "hello", 5);
  EXPECT_EQ(std::memcmp((*region)->data(), "hello", 5), 0);  // unaligned offset works
  auto slice = (*region)->Slice(10, 90);
  ASSERT_TRUE(slice.ok());
  std::memcpy(*slice, "xy", 2);
  EXPECT_EQ(std::memcmp(client_ + 5010, "xy", 2), 0);
  auto status = shm_.GetStatus("");
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(status->size(), 1u);
  EXPECT_EQ((*status)[0].offset, 5000u);
  ASSERT_TRUE(shm_.Unregister("r").ok());
  // The request that still holds the region can use it safely.
  EXPECT_EQ(std::memcmp((*region)->data(), "hello", 5), 0);
  EXPECT_EQ(shm_.Find("r").status().code(), StatusCode::kNotFound);
  // Unregistering a name that is not registered is nothing to do (Triton).
  EXPECT_TRUE(shm_.Unregister("r").ok());
  EXPECT_TRUE(shm_.Unregister("never-registered").ok());
}

TEST_F(ShmManagerTest, BoundsAreCheckedWithoutOverflow) {
  ASSERT_TRUE(shm_.Register("r", key_, 0, 100).ok());
  auto region = *shm_.Find("r");
  EXPECT_TRUE(region->Slice(0, 100).ok());
  EXPECT_TRUE(region->Slice(100, 0).ok());
  EXPECT_FALSE(region->Slice(1, 100).ok());
  EXPECT_FALSE(region->Slice(101, 0).ok());
  EXPECT_FALSE(region->Slice(UINT64_MAX, 2).ok());
  EXPECT_FALSE(region->Slice(2, UINT64_MAX).ok());
}

TEST_F(ShmManagerTest, RegistrationErrors) {
  EXPECT_FALSE(shm_.Register("r", key_, 8000, 500).ok());  // past the object's end
  EXPECT_FALSE(shm_.Register("r", key_, UINT64_MAX, 2).ok());
  EXPECT_FALSE(shm_.Register("r", key_, 0, 0).ok());
  EXPECT_FALSE(shm_.Register("r", "/inferd_no_such_object_x", 0, 10).ok());
  EXPECT_FALSE(shm_.Register("", key_, 0, 10).ok());
  for (const char* bad : {"", "/", "noslash", "/..", "/a/b", "//x", "/a b"}) {
    Status s = shm_.Register("r", bad, 0, 10);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(shm_.Register("r", "/" + std::string(300, 'a'), 0, 10).ok());
  ASSERT_TRUE(shm_.Register("r", key_, 0, 10).ok());
  EXPECT_EQ(shm_.Register("r", key_, 0, 10).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(shm_.Unregister("").ok());
  EXPECT_TRUE(shm_.GetStatus("")->empty());
}

TEST_F(ShmManagerTest, ErrorsNeverEchoTheKey) {
  Status s = shm_.Register("r", key_, 8000, 500);
  EXPECT_EQ(s.message().find(key_), std::string::npos) << s.message();
}

}  // namespace
}  // namespace inferd
