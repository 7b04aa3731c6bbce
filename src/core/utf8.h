// UTF-8 checks for text that must become JSON (RFC 8259: JSON text is
// UTF-8). Names and keys reach the server as bytes (percent-decoded path
// segments, protobuf strings, file names); anything echoed into a JSON
// body goes through here so that the body stays readable by strict parsers.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace inferd {

// True if `s` is well-formed UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF).
bool IsValidUtf8(std::string_view s);

// `s` with each byte that is not part of a well-formed UTF-8 sequence
// written as the four characters "\xNN" (as EscapeControl writes control
// bytes); `s` itself when it is valid.
std::string EscapeInvalidUtf8(std::string_view s);

}  // namespace inferd
