// Decoding and pre-processing of one encoded image into the model's FP32
// output layout. Pure functions of their arguments; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "image/image_options.h"

namespace inferd_image {

enum class ImageFormat { kUnknown, kPng, kJpeg };

struct ImageHeader {
  ImageFormat format = ImageFormat::kUnknown;
  int64_t width = 0;  // 0 when the header does not say (yet)
  int64_t height = 0;
};

// Reads the format and, where the header has them, the dimensions, without
// decoding: PNG's IHDR, JPEG's first SOF marker.
ImageHeader SniffImage(const uint8_t* data, size_t size);

// Decodes `data` (a JPEG or PNG), converts its colour, resizes it to the
// options' size and writes width*height*channels floats to `out` in the
// options' layout. Returns "" on success, else a message saying what is
// wrong with the image (never throws for bad image bytes).
std::string PreprocessImage(const uint8_t* data, size_t size, const ImageOptions& options,
                            float* out);

}  // namespace inferd_image
