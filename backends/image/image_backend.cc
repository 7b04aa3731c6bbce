// image: pre-processing of encoded images (JPEG, PNG) on OpenCV, behind the
// inferd backend ABI. One BYTES input, each element one encoded image; one
// FP32 output, each image decoded, colour-converted, resized, scaled and
// normalised into [C,H,W] or [H,W,C] (image_options.h lists the config
// parameters). Put in front of a model with an ensemble
// (examples/models/digits_pipeline).
//
// Batching: a batching model's input has dims [1] (one image per batch
// row); the output's first dimension is the request's batch size. A bad
// image fails its own request with INVALID_ARGUMENT naming the element and
// the problem; the other requests of the batch are unaffected.
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "common/backend_util.h"
#include "image/image_decode.h"
#include "image/image_options.h"

namespace {

using namespace inferd_backend;
using inferd_image::ImageOptions;

class ImageModel {
 public:
  explicit ImageModel(const InferdModelInfo& info)
      : options_(inferd_image::ParseImageOptions(info)),
        batching_(info.max_batch_size > 0),
        input_(info.inputs[0].name),
        output_(info.outputs[0].name) {
    if (options_.opencv_threads >= 0) cv::setNumThreads(options_.opencv_threads);
    for (uint32_t i = 0; i < info.outputs[0].dims_count; ++i)
      out_dims_.push_back(info.outputs[0].dims[i]);
  }

  // Pre-processes every image of one request into its output.
  void Run(const Request& request) const {
    const InferdTensor in = request.Input(input_.c_str());
    int64_t count = 1;
    for (uint32_t i = 0; i < in.dims_count; ++i) count *= in.shape[i];
    const int64_t rows = batching_ && in.dims_count > 0 ? in.shape[0] : 1;
    if (count != rows) {
      ThrowInvalidArgument("input '" + input_ + "' must hold one image per batch row, has shape " +
                           ShapeString(in.shape, in.dims_count));
    }
    std::vector<int64_t> shape;
    if (batching_) shape.push_back(rows);
    shape.insert(shape.end(), out_dims_.begin(), out_dims_.end());
    const uint64_t per_image =
        static_cast<uint64_t>(options_.width) * options_.height * options_.channels;
    auto* out = static_cast<float*>(request.AllocateOutput(output_.c_str(), INFERD_TYPE_FP32, shape,
                                                           per_image * rows * sizeof(float)));
    const auto* p = static_cast<const uint8_t*>(in.buffer);
    uint64_t left = in.byte_size;
    for (int64_t i = 0; i < rows; ++i) {
      if (left < 4) ThrowInvalidArgument("input '" + input_ + "': truncated BYTES element");
      const uint32_t len =
          uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
      p += 4;
      left -= 4;
      if (len > left) ThrowInvalidArgument("input '" + input_ + "': truncated BYTES element");
      if (len > (1u << 30)) {
        ThrowInvalidArgument("input '" + input_ + "' element " + std::to_string(i) + ": image of " +
                             std::to_string(len) + " bytes is too large");
      }
      const std::string problem =
          inferd_image::PreprocessImage(p, len, options_, out + per_image * i);
      if (!problem.empty()) {
        ThrowInvalidArgument("input '" + input_ + "'" +
                             (rows > 1 ? " element " + std::to_string(i) : std::string()) + ": " +
                             problem);
      }
      p += len;
      left -= len;
    }
  }

 private:
  ImageOptions options_;
  bool batching_;
  std::string input_;
  std::string output_;
  std::vector<int64_t> out_dims_;
};

class ImageInstance {
 public:
  ImageInstance(ImageModel& model, const InferdInstanceInfo&) : model_(model) {}
  void Execute(InferdRequest* const* requests, uint32_t n) {
    ForEachRequest(requests, n, [&](const Request& r) { model_.Run(r); });
  }

 private:
  const ImageModel& model_;
};

}  // namespace

extern "C" INFERD_BACKEND_EXPORT const InferdBackendApi* inferd_backend_entry(uint32_t) {
  return &inferd_backend::BackendTable<ImageModel, ImageInstance>::kApi;
}
