// The device layer as this machine has it (no GPU in CI), the pinned staging
// pool and the CUDA shared-memory registry over a fake device whose "GPU"
// memory is host memory, so that bounds checks and copies run for real.
#include "core/device_memory.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/base64.h"
#include "core/pinned_pool.h"
#include "fake_device.h"
#include "shm/cuda_shm_manager.h"

namespace inferd {
namespace {

using testing_fakes::FakeDevice;

TEST(DeviceMemoryTest, WithoutGpuEverythingSaysNoCudaDevice) {
  auto dm = OpenDeviceMemory();
  if (dm->DeviceCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(dm->Unavailable().rfind("no CUDA device", 0), 0u) << dm->Unavailable();
  auto gpu = dm->Allocate(MemoryType::kGpu, 0, 1024);
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gpu.status().message().find("no CUDA device"), std::string::npos);
  auto ipc = dm->OpenIpcHandle(std::string(kCudaIpcHandleSize, '\0'), 0, 16);
  ASSERT_FALSE(ipc.ok());
  EXPECT_NE(ipc.status().message().find("no CUDA device"), std::string::npos);
  auto host = dm->Allocate(MemoryType::kCpu, 0, 1024);
  ASSERT_TRUE(host.ok()) << host.status().message();
  EXPECT_EQ((*host)->size(), 1024u);
  EXPECT_EQ((*host)->memory_type(), MemoryType::kCpu);
}

TEST(PinnedStagingPoolTest, ReusesPinnedBuffersBySizeClass) {
  auto dev = std::make_shared<FakeDevice>();
  PinnedStagingPool pool(dev, 1 << 20);
  char* first = nullptr;
  {
    auto a = pool.Acquire(1000);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ((*a)->memory_type(), MemoryType::kCpuPinned);
    EXPECT_EQ((*a)->size(), 1000u);
    first = (*a)->data();
  }
  EXPECT_EQ(pool.cached_bytes(), size_t{64} << 10);
  auto b = pool.Acquire(2000);  // same 64 KiB class: the same buffer again
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->data(), first);
  EXPECT_EQ(dev->pinned_allocations, 1);
  auto c = pool.Acquire(100 << 10);  // another class, while b is out
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(dev->pinned_allocations, 2);
}

TEST(PinnedStagingPoolTest, KeepsNoMoreThanItsCap) {
  auto dev = std::make_shared<FakeDevice>();
  PinnedStagingPool pool(dev, 64 << 10);
  {
    auto a = pool.Acquire(10);
    auto b = pool.Acquire(10);
    ASSERT_TRUE(a.ok() && b.ok());
  }
  EXPECT_EQ(pool.cached_bytes(), size_t{64} << 10);  // the second was freed
}

TEST(PinnedStagingPoolTest, FallsBackToHostMemoryWithoutPinned) {
  auto dev = std::make_shared<FakeDevice>();
  dev->pinned_works = false;
  PinnedStagingPool pool(dev, 1 << 20);
  auto a = pool.Acquire(5000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->memory_type(), MemoryType::kCpu);
  std::memset((*a)->data(), 1, 5000);
  a->reset();
  EXPECT_EQ(pool.cached_bytes(), 0u);
}

TEST(CudaSharedMemoryTest, RegisterWithoutGpuIsUnavailable) {
  auto dev = std::make_shared<FakeDevice>();
  dev->devices = 0;
  CudaSharedMemoryManager m(dev);
  Status s = m.Register("r", std::string(64, 'a'), 0, 16);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("no CUDA device"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'r'"), std::string::npos) << s.message();
  auto all = m.GetStatus("");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
  EXPECT_TRUE(m.Unregister("r").ok());  // not registered: nothing to do (Triton)
  EXPECT_TRUE(m.Unregister("").ok());
}

TEST(CudaSharedMemoryTest, RegisterChecksHandleDeviceAndSize) {
  auto dev = std::make_shared<FakeDevice>();
  CudaSharedMemoryManager m(dev);
  EXPECT_EQ(m.Register("", std::string(64, 'a'), 0, 16).code(), StatusCode::kInvalidArgument);
  Status s = m.Register("r", std::string(63, 'a'), 0, 16);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("64"), std::string::npos) << s.message();
  s = m.Register("r", std::string(64, 'a'), 1, 16);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("GPU 1 does not exist"), std::string::npos) << s.message();
  EXPECT_EQ(m.Register("r", std::string(64, 'a'), -1, 16).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.Register("r", std::string(64, 'a'), 0, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.Register("r", std::string(64, 'x'), 0, 16).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.Register("r", std::string(64, 'a'), 0, 8192).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(dev->opened.empty());
  ASSERT_TRUE(m.Register("r", std::string(64, 'a'), 0, 1024).ok());
  EXPECT_EQ(m.Register("r", std::string(64, 'b'), 0, 16).code(), StatusCode::kAlreadyExists);
  auto st = m.GetStatus("r");
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->size(), 1u);
  EXPECT_EQ((*st)[0].byte_size, 1024u);
  EXPECT_EQ((*st)[0].device_id, 0);
  EXPECT_EQ(m.GetStatus("other").status().code(), StatusCode::kNotFound);
}

TEST(CudaSharedMemoryTest, CopiesStayInsideTheRegion) {
  auto dev = std::make_shared<FakeDevice>();
  CudaSharedMemoryManager m(dev);
  ASSERT_TRUE(m.Register("r", std::string(64, 'a'), 0, 100).ok());
  auto r = m.Find("r");
  ASSERT_TRUE(r.ok());
  const char in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE((*r)->CopyFromHost(92, in, 8).ok());
  char out[8] = {};
  ASSERT_TRUE((*r)->CopyToHost(92, 8, out).ok());
  EXPECT_EQ(std::memcmp(in, out, 8), 0);
  EXPECT_EQ(dev->last_mapping[91], 7);  // untouched before the slice
  Status past = (*r)->CopyFromHost(93, in, 8);
  EXPECT_EQ(past.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(past.message().find("out of bounds"), std::string::npos);
  EXPECT_FALSE((*r)->CopyToHost(~uint64_t{0}, 2, out).ok());  // offset + size overflows
  EXPECT_FALSE((*r)->CheckRange(101, 0).ok());
  // Unregistering keeps the mapping alive for the holder.
  ASSERT_TRUE(m.Unregister("r").ok());
  EXPECT_TRUE((*r)->CopyToHost(0, 8, out).ok());
  EXPECT_EQ(m.Find("r").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace inferd

namespace inferd {
namespace {

TEST(Base64Test, RoundTripsAndRejectsMalformedInput) {
  for (std::string s : {std::string(""), std::string("a"), std::string("ab"), std::string("abc"),
                        std::string(64, '\0'), std::string("\xff\x00\x10", 3)}) {
    auto back = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(back.has_value()) << s;
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(Base64Encode("hello"), "aGVsbG8=");
  EXPECT_EQ(*Base64Decode("aGVsbG8="), "hello");
  EXPECT_FALSE(Base64Decode("aGVsbG8").has_value());   // length
  EXPECT_FALSE(Base64Decode("aGV%bG8=").has_value());  // alphabet
  EXPECT_FALSE(Base64Decode("aG=sbG8=").has_value());  // padding inside
  EXPECT_FALSE(Base64Decode("aGVs=G8=").has_value());  // padding in a middle group
  EXPECT_FALSE(Base64Decode("aGVsbG=8").has_value());  // data after padding
}

}  // namespace
}  // namespace inferd
