// Making client-supplied and file-supplied text safe to show: in error
// messages sent back to clients (bounded, so a request cannot make the
// server echo megabytes, and without the server's own file-system paths) and
// in log lines (control characters escaped, so a model name or backend
// message cannot forge or split log lines). docs/security.md.
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace inferd {

// Longest piece of client data an error message quotes.
inline constexpr size_t kMaxEchoBytes = 128;
// Longest error message sent to a client (a last bound on whatever it holds).
inline constexpr size_t kMaxErrorMessageBytes = 4096;

// Control characters (< 0x20, 0x7f) as \n, \r, \t or \xNN; a backslash as
// "\\". Other bytes (UTF-8 included) unchanged.
std::string EscapeControl(std::string_view s);

// Client data for an error message: control characters escaped, cut to
// `max` bytes of input with "...(N bytes)" appended when cut.
std::string Bounded(std::string_view s, size_t max = kMaxEchoBytes);

// A whole error message for a client: cut to kMaxErrorMessageBytes.
std::string BoundMessage(std::string_view message);

// `message` with each of `paths` (non-empty, e.g. the model repositories,
// the backend directory) replaced by `placeholder`.
std::string RedactPaths(std::string message, const std::vector<std::string>& paths,
                        std::string_view placeholder = "<server path>");

}  // namespace inferd
