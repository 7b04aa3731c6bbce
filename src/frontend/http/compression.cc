#include "frontend/http/compression.h"

#include <zlib.h>

#include <cstdlib>

namespace inferd::http {

StatusOr<std::string> Inflate(std::string_view in, size_t max_output) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 | 32) != Z_OK) return Internal("cannot initialise zlib");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char chunk[65536];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof(chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return InvalidArgument("the compressed request body is corrupt or truncated");
    }
    const size_t produced = sizeof(chunk) - zs.avail_out;
    if (out.size() + produced > max_output) {
      inflateEnd(&zs);
      return InvalidArgument("decompressed request body exceeds the maximum of " +
                             std::to_string(max_output) +
                             " bytes. Use --http-max-input-size to increase the limit.");
    }
    out.append(chunk, produced);
    if (rc == Z_OK && produced == 0 && zs.avail_in == 0) {
      inflateEnd(&zs);
      return InvalidArgument("the compressed request body is truncated");
    }
  }
  inflateEnd(&zs);
  return out;
}

StatusOr<std::string> Compress(std::string_view data, Encoding encoding) {
  z_stream zs{};
  const int window = encoding == Encoding::kGzip ? 15 + 16 : 15;
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Internal("cannot initialise zlib");
  }
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return Internal("compression failed");
  return out;
}

Encoding ChooseEncoding(std::string_view header) {
  Encoding best = Encoding::kIdentity;
  double best_q = -1;
  size_t pos = 0;
  while (pos <= header.size()) {
    size_t end = header.find(',', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view item = header.substr(pos, end - pos);
    pos = end + 1;
    double q = 1.0;
    size_t semi = item.find(';');
    std::string_view name = item.substr(0, semi);
    if (semi != std::string_view::npos) {
      std::string_view rest = item.substr(semi + 1);
      size_t qpos = rest.find("q=");
      if (qpos != std::string_view::npos) q = std::atof(std::string(rest.substr(qpos + 2)).c_str());
    }
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    Encoding e;
    if (name == "gzip")
      e = Encoding::kGzip;
    else if (name == "deflate")
      e = Encoding::kDeflate;
    else if (name == "identity")
      e = Encoding::kIdentity;
    else
      continue;
    if (q > best_q) {
      best_q = q;
      best = e;
    }
    if (end == header.size()) break;
  }
  return best_q > 0 ? best : Encoding::kIdentity;
}

}  // namespace inferd::http
