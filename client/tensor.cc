#include "inferd/client/tensor.h"

namespace inferd::client {

size_t ElementSize(std::string_view dt) {
  if (dt == "BOOL" || dt == "UINT8" || dt == "INT8") return 1;
  if (dt == "UINT16" || dt == "INT16" || dt == "FP16" || dt == "BF16") return 2;
  if (dt == "UINT32" || dt == "INT32" || dt == "FP32") return 4;
  if (dt == "UINT64" || dt == "INT64" || dt == "FP64") return 8;
  return 0;
}

int64_t Tensor::ElementCount() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor& Tensor::SetStrings(const std::vector<std::string>& values) {
  datatype = "BYTES";
  data.clear();
  for (const auto& v : values) {
    const uint32_t len = static_cast<uint32_t>(v.size());
    char prefix[4];
    for (int i = 0; i < 4; ++i) prefix[i] = static_cast<char>((len >> (8 * i)) & 0xff);
    data.append(prefix, 4);
    data.append(v);
  }
  return *this;
}

std::optional<std::vector<std::string>> Tensor::ToStrings() const {
  if (datatype != "BYTES") return std::nullopt;
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < 4) return std::nullopt;
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i)
      len |= uint32_t(static_cast<unsigned char>(data[pos + i])) << (8 * i);
    pos += 4;
    if (data.size() - pos < len) return std::nullopt;
    out.emplace_back(data, pos, len);
    pos += len;
  }
  return out;
}

Tensor MakeBytesTensor(std::string name, std::vector<int64_t> shape,
                       const std::vector<std::string>& values) {
  Tensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.SetStrings(values);
  return t;
}

}  // namespace inferd::client
