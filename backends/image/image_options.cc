#include "image/image_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <opencv2/imgproc.hpp>

namespace inferd_image {
namespace {

using inferd_backend::FindParameter;
using inferd_backend::ThrowInvalidArgument;

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A finite float, or an error naming the parameter.
float ParseFloat(const char* key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(v)) {
    ThrowInvalidArgument(std::string("image backend: parameter '") + key +
                         "' must be a number or a comma-separated list of numbers, got '" + text +
                         "'");
  }
  return v;
}

// One value for every channel, or one per channel.
std::vector<float> PerChannel(const InferdModelInfo& info, const char* key, float fallback,
                              int channels) {
  const char* v = FindParameter(info, key);
  if (v == nullptr || *v == '\0') return std::vector<float>(channels, fallback);
  std::vector<float> values;
  std::string text(v);
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    values.push_back(ParseFloat(key, item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (values.size() == 1) return std::vector<float>(channels, values[0]);
  if (static_cast<int>(values.size()) != channels) {
    ThrowInvalidArgument(std::string("image backend: parameter '") + key + "' has " +
                         std::to_string(values.size()) + " values, the output has " +
                         std::to_string(channels) + " channels");
  }
  return values;
}

// One BYTES input, one FP32 output, no sequence controls.
void CheckSignature(const InferdModelInfo& info) {
  if (info.input_count != 1 || info.inputs[0].datatype != INFERD_TYPE_BYTES) {
    ThrowInvalidArgument(
        "image backend: the model needs exactly one input, of TYPE_STRING "
        "(encoded JPEG or PNG images)");
  }
  if (info.output_count != 1 || info.outputs[0].datatype != INFERD_TYPE_FP32) {
    ThrowInvalidArgument("image backend: the model needs exactly one output, of TYPE_FP32");
  }
  if (info.control_count > 0)
    ThrowInvalidArgument("image backend: sequence batching is not supported");
}

// Sets o.color and o.channels; returns the lower-cased parameter (for errors
// that name it later).
std::string ParseColor(const InferdModelInfo& info, ImageOptions& o) {
  const char* color = FindParameter(info, "color");
  std::string c = Lower(color ? color : "rgb");
  if (c == "gray" || c == "grey" || c == "grayscale") {
    o.color = Color::kGray;
  } else if (c == "rgb") {
    o.color = Color::kRgb;
  } else if (c == "bgr") {
    o.color = Color::kBgr;
  } else {
    ThrowInvalidArgument("image backend: parameter 'color' must be gray, rgb or bgr, got '" + c +
                         "'");
  }
  o.channels = o.color == Color::kGray ? 1 : 3;
  return c;
}

Layout ParseLayout(const InferdModelInfo& info) {
  const char* layout = FindParameter(info, "layout");
  const std::string l = Lower(layout ? layout : "chw");
  if (l == "chw" || l == "nchw") return Layout::kChw;
  if (l == "hwc" || l == "nhwc") return Layout::kHwc;
  ThrowInvalidArgument("image backend: parameter 'layout' must be CHW or HWC, got '" + l + "'");
}

int ParseInterpolation(const InferdModelInfo& info) {
  const char* interp = FindParameter(info, "interpolation");
  const std::string i = Lower(interp ? interp : "area");
  if (i == "area") return cv::INTER_AREA;
  if (i == "linear" || i == "bilinear") return cv::INTER_LINEAR;
  if (i == "nearest") return cv::INTER_NEAREST;
  if (i == "cubic" || i == "bicubic") return cv::INTER_CUBIC;
  ThrowInvalidArgument(
      "image backend: parameter 'interpolation' must be area, linear, nearest or cubic, got '" + i +
      "'");
}

// Sets o.height and o.width from the output's dims, which must agree with
// o.layout and o.channels (`color` is the parameter that gave the channels).
void ParseOutputSize(const InferdModelInfo& info, const std::string& color, ImageOptions& o) {
  const InferdTensorSpec& out = info.outputs[0];
  if (out.dims_count != 3) {
    ThrowInvalidArgument("image backend: output '" + std::string(out.name) +
                         "' needs three dims ([C,H,W] or [H,W,C]), has " +
                         inferd_backend::ShapeString(out.dims, out.dims_count));
  }
  const int64_t ch = o.layout == Layout::kChw ? out.dims[0] : out.dims[2];
  const int64_t h = o.layout == Layout::kChw ? out.dims[1] : out.dims[0];
  const int64_t w = o.layout == Layout::kChw ? out.dims[2] : out.dims[1];
  if (ch != o.channels) {
    ThrowInvalidArgument("image backend: output '" + std::string(out.name) + "' has " +
                         std::to_string(ch) + " channels in its dims, color '" + color +
                         "' gives " + std::to_string(o.channels));
  }
  if (h < 1 || w < 1 || h > 16384 || w > 16384) {
    ThrowInvalidArgument("image backend: output '" + std::string(out.name) +
                         "' needs a fixed height and width between 1 and 16384, has " +
                         inferd_backend::ShapeString(out.dims, out.dims_count));
  }
  o.height = static_cast<int>(h);
  o.width = static_cast<int>(w);
}

// scale, mean and std (one per channel, o.channels already set).
void ParseNormalisation(const InferdModelInfo& info, ImageOptions& o) {
  const char* scale = FindParameter(info, "scale");
  if (scale != nullptr && *scale != '\0') o.scale = ParseFloat("scale", scale);
  o.mean = PerChannel(info, "mean", 0.0f, o.channels);
  o.std = PerChannel(info, "std", 1.0f, o.channels);
  for (float s : o.std) {
    if (s == 0.0f) ThrowInvalidArgument("image backend: parameter 'std' must not be 0");
  }
}

}  // namespace

ImageOptions ParseImageOptions(const InferdModelInfo& info) {
  CheckSignature(info);
  ImageOptions o;
  const std::string color = ParseColor(info, o);
  o.layout = ParseLayout(info);
  o.interpolation = ParseInterpolation(info);
  ParseOutputSize(info, color, o);
  ParseNormalisation(info, o);
  o.max_pixels =
      inferd_backend::IntParameter(info, "max_pixels", o.max_pixels, 1, int64_t{1} << 30);
  o.opencv_threads =
      static_cast<int>(inferd_backend::IntParameter(info, "opencv_threads", -1, 0, 256));
  return o;
}

}  // namespace inferd_image
