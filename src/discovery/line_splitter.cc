#include "discovery/line_splitter.h"

namespace inferd::discovery {

Status LineSplitter::Emit(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return Status();
  return on_line_(line);
}

Status LineSplitter::Feed(std::string_view chunk) {
  if (!failed_.ok()) return failed_;
  while (!chunk.empty()) {
    size_t newline = chunk.find('\n');
    std::string_view piece = chunk.substr(0, newline);
    if (partial_.size() + piece.size() > max_line_) {
      failed_ = ResourceExhausted("a line of the stream is longer than " +
                                  std::to_string(max_line_) + " bytes");
      partial_.clear();
      return failed_;
    }
    if (newline == std::string_view::npos) {
      partial_.append(piece);
      return Status();
    }
    Status s;
    if (partial_.empty()) {
      s = Emit(piece);
    } else {
      partial_.append(piece);
      s = Emit(partial_);
      partial_.clear();
    }
    if (!s.ok()) {
      failed_ = s;
      return s;
    }
    chunk.remove_prefix(newline + 1);
  }
  return Status();
}

}  // namespace inferd::discovery
