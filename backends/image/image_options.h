// The image pre-processing steps of one model, read once from its config
// `parameters` (string values) and its one output's dims. Plain values;
// parsing throws inferd_backend::BackendError (INVALID_ARGUMENT) naming the
// parameter, so a bad config makes the model UNAVAILABLE with that reason.
//
//   color          gray | rgb | bgr              (default rgb)
//   layout         CHW | HWC                     (default CHW)
//   interpolation  area | linear | nearest | cubic (default area)
//   scale          pixel multiplier, 0..255 in   (default 1)
//   mean, std      one value, or one per channel, comma-separated; applied
//                  after scale: (pixel * scale - mean) / std (default 0, 1)
//   max_pixels     largest decoded image accepted, width * height
//                  (default 40000000)
//   opencv_threads OpenCV's thread count; process-wide, shared with the onnx
//                  backend, so only set when given (the last model loaded wins)
//
// The output size comes from the output's dims: [C,H,W] for CHW or [H,W,C]
// for HWC, C = 1 for gray and 3 for rgb/bgr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/backend_util.h"

namespace inferd_image {

enum class Color { kGray, kRgb, kBgr };
enum class Layout { kChw, kHwc };

struct ImageOptions {
  Color color = Color::kRgb;
  Layout layout = Layout::kChw;
  int interpolation = 0;  // cv::InterpolationFlags
  int width = 0;
  int height = 0;
  int channels = 3;
  float scale = 1.0f;
  std::vector<float> mean;  // one per channel
  std::vector<float> std;   // one per channel
  int64_t max_pixels = 40000000;
  int opencv_threads = -1;  // -1: leave OpenCV's setting alone
};

// Reads the options of `info`, which must have one BYTES input and one FP32
// output of three dims.
ImageOptions ParseImageOptions(const InferdModelInfo& info);

}  // namespace inferd_image
