// The `infer` command-line client: shared declarations of its parts.
//   infer_main.cc      flags and dispatch
//   infer_commands.cc  one function per command, on libinferclient
//   infer_output.cc    readable and --json rendering
// Exit codes: 0 success; 1 the server answered with an error (or "not
// ready"); 2 bad command line or input files; 3 the server cannot be reached.
#pragma once

#include <string>
#include <vector>

#include "inferd/client/client.h"

namespace inferd::cli {

enum ExitCode { kOk = 0, kServerError = 1, kUsage = 2, kUnreachable = 3 };

struct Options {
  std::string url;  // empty: localhost:8000 (http) or localhost:8001 (grpc)
  std::string protocol = "http";
  std::string version;
  bool json = false;
  std::string command;
  std::vector<std::string> args;     // positional arguments after the command
  std::vector<std::string> inputs;   // --input NAME:DATATYPE:SHAPE:VALUES|@FILE
  std::string input_json;            // --input-json FILE
  std::vector<std::string> outputs;  // --output NAME
  std::string request_id;            // --id
  int classification = 0;            // --classification N
  // --ssl, --ca, --cert, --key, --server-name, --insecure, -H (https:// in
  // -u turns TLS on for HTTP too).
  client::ClientOptions connection;
};

// An error for the user, with its exit code.
struct CliError {
  int code;
  std::string message;
};

// Runs the command; returns the exit code (errors printed on stderr).
int RunCommand(const Options& o, client::Client& c);

// Builds request inputs from --input specs and --input-json; throws CliError.
std::vector<client::Tensor> ParseInputs(const Options& o);

// Rendering (stdout).
void PrintServerMetadata(const client::ServerMetadata& m);
void PrintModelMetadata(const client::ModelMetadata& m);
void PrintIndex(const std::vector<client::RepositoryEntry>& entries);
void PrintStatistics(const std::string& json);
void PrintInferResult(const client::InferResult& r, bool json);
// JSON text indented for people.
std::string PrettyJson(const std::string& json);

}  // namespace inferd::cli
