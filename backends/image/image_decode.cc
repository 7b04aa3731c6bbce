#include "image/image_decode.h"

#include <cstring>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

namespace inferd_image {
namespace {

uint32_t Be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }
uint32_t Be32(const uint8_t* p) { return (Be16(p) << 16) | Be16(p + 2); }

// The first start-of-frame marker's dimensions; 0x0 if none is found.
void JpegSize(const uint8_t* d, size_t n, ImageHeader& h) {
  size_t i = 2;
  while (i + 4 <= n) {
    if (d[i] != 0xFF) return;  // not at a marker: corrupt, let the decoder say so
    const uint8_t m = d[i + 1];
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {  // markers without a length
      i += 2;
      continue;
    }
    const uint32_t len = Be16(d + i + 2);
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof) {
      if (i + 9 <= n) {
        h.height = Be16(d + i + 5);
        h.width = Be16(d + i + 7);
      }
      return;
    }
    if (m == 0xDA || len < 2) return;  // start of scan before a frame header
    i += 2 + len;
  }
}

std::string Preview(const uint8_t* data, size_t size) {
  std::string s;
  for (size_t i = 0; i < size && i < 8; ++i) {
    static const char kHex[] = "0123456789abcdef";
    s += kHex[data[i] >> 4];
    s += kHex[data[i] & 15];
  }
  return s;
}

}  // namespace

ImageHeader SniffImage(const uint8_t* data, size_t size) {
  ImageHeader h;
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) {
    h.format = ImageFormat::kPng;
    if (size >= 24 && std::memcmp(data + 12, "IHDR", 4) == 0) {
      h.width = Be32(data + 16);
      h.height = Be32(data + 20);
    }
  } else if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    h.format = ImageFormat::kJpeg;
    JpegSize(data, size, h);
  }
  return h;
}

std::string PreprocessImage(const uint8_t* data, size_t size, const ImageOptions& o, float* out) {
  if (size == 0) return "empty image (0 bytes)";
  const ImageHeader header = SniffImage(data, size);
  if (header.format == ImageFormat::kUnknown) {
    return "not a JPEG or PNG image (" + std::to_string(size) + " bytes starting " +
           Preview(data, size) + ")";
  }
  const char* format = header.format == ImageFormat::kPng ? "PNG" : "JPEG";
  if (header.width * header.height > o.max_pixels) {
    return std::string(format) + " image of " + std::to_string(header.width) + "x" +
           std::to_string(header.height) + " pixels is larger than max_pixels (" +
           std::to_string(o.max_pixels) + ")";
  }
  cv::Mat decoded;
  try {
    const cv::Mat raw(1, static_cast<int>(size), CV_8UC1, const_cast<uint8_t*>(data));
    decoded = cv::imdecode(raw, o.color == Color::kGray ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    return std::string("cannot decode ") + format + " image: " + e.err;
  }
  if (decoded.empty() || decoded.cols <= 0 || decoded.rows <= 0) {
    return std::string("cannot decode ") + format + " image (" + std::to_string(size) +
           " bytes): corrupt or truncated";
  }
  cv::Mat resized;
  if (decoded.cols == o.width && decoded.rows == o.height) {
    resized = decoded;
  } else {
    cv::resize(decoded, resized, cv::Size(o.width, o.height), 0, 0, o.interpolation);
  }
  if (o.color == Color::kRgb) cv::cvtColor(resized, resized, cv::COLOR_BGR2RGB);
  const int c = o.channels;
  const size_t plane = static_cast<size_t>(o.width) * o.height;
  for (int y = 0; y < o.height; ++y) {
    const uint8_t* row = resized.ptr<uint8_t>(y);
    for (int x = 0; x < o.width; ++x) {
      for (int k = 0; k < c; ++k) {
        const float v = (row[x * c + k] * o.scale - o.mean[k]) / o.std[k];
        const size_t pixel = static_cast<size_t>(y) * o.width + x;
        if (o.layout == Layout::kChw) {
          out[k * plane + pixel] = v;
        } else {
          out[pixel * c + k] = v;
        }
      }
    }
  }
  return "";
}

}  // namespace inferd_image
