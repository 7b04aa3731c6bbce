// HostsFileSource: a file with one HOST:PORT per line (format:
// ParseHostsFileContent, host_list.h), re-read every interval.
//
// The path is opened afresh on every poll (never a kept fd), so a file
// replaced by rename or by a Kubernetes ConfigMap's symlink swap
// (..data -> ..2024_01_01_...) is seen; the whole content is read and
// compared each time (the files are small), so an edit that keeps the size
// and mtime is seen too.
//
// Ownership/threading: PollingHostSource (one thread; callback on it).
// Errors: a missing or unreadable file, a file over 16 MiB, or a bad line
// keeps the last good set (none before the first good read), counts one
// error per poll and logs the reason once per distinct reason (with the
// line number for a bad line).
#pragma once

#include <chrono>
#include <string>

#include "discovery/polling_host_source.h"

namespace inferd::discovery {

class HostsFileSource final : public PollingHostSource {
 public:
  HostsFileSource(std::string path, std::chrono::milliseconds interval)
      : PollingHostSource("file:" + path, interval), path_(std::move(path)) {}
  ~HostsFileSource() override { Stop(); }

 protected:
  std::optional<HostSet> Poll() override;

 private:
  const std::string path_;
};

}  // namespace inferd::discovery
