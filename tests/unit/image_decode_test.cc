// Unit tests of the image backend's option parsing and pre-processing
// (no server: the functions are pure).
#include "image/image_decode.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "image/image_options.h"

namespace inferd_image {
namespace {

std::vector<uint8_t> Encode(const cv::Mat& m, const char* ext) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(cv::imencode(ext, m, out));
  return out;
}

struct Config {
  std::vector<InferdParameter> params;
  std::vector<int64_t> dims;
  InferdTensorSpec in{"IMAGE", INFERD_TYPE_BYTES, 1, nullptr, 0};
  InferdTensorSpec out{"PIXELS", INFERD_TYPE_FP32, 3, nullptr, 0};
  InferdModelInfo info{};
  const int64_t one = 1;
  Config(std::vector<InferdParameter> p, std::vector<int64_t> d)
      : params(std::move(p)), dims(std::move(d)) {
    in.dims = &one;
    out.dims = dims.data();
    out.dims_count = static_cast<uint32_t>(dims.size());
    info.input_count = 1;
    info.inputs = &in;
    info.output_count = 1;
    info.outputs = &out;
    info.parameter_count = static_cast<uint32_t>(params.size());
    info.parameters = params.data();
  }
};

TEST(ImageOptions, DefaultsAndSizeFromDims) {
  Config c({}, {3, 10, 20});
  ImageOptions o = ParseImageOptions(c.info);
  EXPECT_EQ(o.channels, 3);
  EXPECT_EQ(o.height, 10);
  EXPECT_EQ(o.width, 20);
  EXPECT_EQ(o.mean, (std::vector<float>{0, 0, 0}));
}

TEST(ImageOptions, BadConfigsNameTheParameter) {
  auto message = [](std::vector<InferdParameter> p, std::vector<int64_t> d) {
    Config c(std::move(p), std::move(d));
    try {
      ParseImageOptions(c.info);
    } catch (const inferd_backend::BackendError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"color", "purple"}}, {3, 8, 8}).find("'color'"), std::string::npos);
  EXPECT_NE(message({{"color", "gray"}}, {3, 8, 8}).find("channels"), std::string::npos);
  EXPECT_NE(message({{"mean", "1,2"}}, {3, 8, 8}).find("'mean' has 2 values"), std::string::npos);
  EXPECT_NE(message({{"scale", "abc"}}, {3, 8, 8}).find("'scale'"), std::string::npos);
  EXPECT_NE(message({{"std", "0"}}, {3, 8, 8}).find("'std'"), std::string::npos);
  EXPECT_NE(message({}, {3, -1, 8}).find("fixed height"), std::string::npos);
}

TEST(SniffImage, ReadsPngAndJpegSizes) {
  cv::Mat m(7, 13, CV_8UC3, cv::Scalar(1, 2, 3));
  for (const char* ext : {".png", ".jpg"}) {
    auto bytes = Encode(m, ext);
    ImageHeader h = SniffImage(bytes.data(), bytes.size());
    EXPECT_EQ(h.format, ext[1] == 'p' ? ImageFormat::kPng : ImageFormat::kJpeg);
    EXPECT_EQ(h.width, 13);
    EXPECT_EQ(h.height, 7);
  }
  const uint8_t junk[] = {'G', 'I', 'F', '8'};
  EXPECT_EQ(SniffImage(junk, sizeof junk).format, ImageFormat::kUnknown);
}

TEST(PreprocessImage, GrayHwcNormalised) {
  Config c({{"color", "gray"}, {"layout", "HWC"}, {"mean", "100"}, {"std", "2"}}, {2, 2, 1});
  ImageOptions o = ParseImageOptions(c.info);
  auto bytes = Encode(cv::Mat(4, 4, CV_8UC1, cv::Scalar(110)), ".png");
  float out[4];
  EXPECT_EQ(PreprocessImage(bytes.data(), bytes.size(), o, out), "");
  for (float v : out) EXPECT_FLOAT_EQ(v, 5.0f);
}

TEST(PreprocessImage, BadImagesSayWhy) {
  Config c({{"max_pixels", "100"}}, {3, 2, 2});
  ImageOptions o = ParseImageOptions(c.info);
  float out[12];
  const uint8_t text[] = {'h', 'i'};
  EXPECT_NE(PreprocessImage(text, 2, o, out).find("not a JPEG or PNG"), std::string::npos);
  EXPECT_NE(PreprocessImage(text, 0, o, out).find("empty image"), std::string::npos);
  auto big = Encode(cv::Mat(20, 20, CV_8UC3, cv::Scalar(0)), ".png");
  EXPECT_NE(PreprocessImage(big.data(), big.size(), o, out).find("max_pixels"), std::string::npos);
  auto small = Encode(cv::Mat(5, 5, CV_8UC3, cv::Scalar(0)), ".jpg");
  EXPECT_NE(PreprocessImage(small.data(), small.size() / 2, o, out).find("cannot decode JPEG"),
            std::string::npos);
}

}  // namespace
}  // namespace inferd_image
