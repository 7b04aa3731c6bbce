#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "infer_cli.h"

namespace inferd::cli {
namespace {

using client::ClientStatus;

// Turns a failed call into the error the user sees.
void Check(const ClientStatus& st, const std::string& what) {
  if (st.ok) return;
  throw CliError{st.unreachable ? kUnreachable : kServerError, what + ": " + st.message};
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CliError{kUsage, "cannot read " + path};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::string& Arg(const Options& o, size_t i, const char* what) {
  if (o.args.size() <= i) throw CliError{kUsage, o.command + " needs " + what};
  return o.args[i];
}

void NoExtraArgs(const Options& o, size_t n) {
  if (o.args.size() > n)
    throw CliError{kUsage, "unexpected argument '" + o.args[n] + "' after " + o.command};
}

// The error of a shape that is not D1,D2,... (each D a non-negative integer).
CliError BadShape(const std::string& shape, const std::string& input) {
  return CliError{kUsage, "input " + input + ": bad shape '" + shape + "' (want D1,D2,...)"};
}

std::vector<int64_t> ParseShape(const std::string& s, const std::string& input) {
  std::vector<int64_t> dims;
  std::stringstream ss(s);
  std::string d;
  while (std::getline(ss, d, ',')) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(d, &used);
    } catch (const std::exception&) {
    }
    if (used != d.size() || v < 0) throw BadShape(s, input);
    dims.push_back(v);
  }
  return dims;
}

client::Tensor ParseInputSpec(const std::string& spec) {
  // NAME:DATATYPE:SHAPE:VALUES — VALUES may itself contain ':'.
  const size_t a = spec.find(':');
  const size_t b = a == std::string::npos ? a : spec.find(':', a + 1);
  const size_t c = b == std::string::npos ? b : spec.find(':', b + 1);
  if (c == std::string::npos)
    throw CliError{kUsage, "--input '" + spec + "': want NAME:DATATYPE:SHAPE:VALUES"};
  client::Tensor t;
  t.name = spec.substr(0, a);
  t.datatype = spec.substr(a + 1, b - a - 1);
  t.shape = ParseShape(spec.substr(b + 1, c - b - 1), t.name);
  const std::string values = spec.substr(c + 1);
  if (!values.empty() && values[0] == '@') {
    t.data = ReadFile(values.substr(1));
    const size_t es = client::ElementSize(t.datatype);
    if (t.datatype != "BYTES" && es == 0)
      throw CliError{kUsage, "input " + t.name + ": unknown datatype '" + t.datatype + "'"};
    if (es != 0 && t.data.size() != size_t(t.ElementCount()) * es) {
      throw CliError{kUsage, "input " + t.name + ": " + values.substr(1) + " has " +
                                 std::to_string(t.data.size()) + " bytes, the shape needs " +
                                 std::to_string(t.ElementCount() * int64_t(es))};
    }
    return t;
  }
  ClientStatus st = client::SetDataFromJson(t, values);
  if (!st.ok) throw CliError{kUsage, st.message};
  return t;
}

std::vector<client::Tensor> InputsFromJsonFile(const std::string& path) {
  const std::string text = ReadFile(path);
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("inputs") || !d["inputs"].IsArray())
    throw CliError{kUsage, path + ": want a JSON object with an \"inputs\" array"};
  std::vector<client::Tensor> out;
  for (const auto& in : d["inputs"].GetArray()) {
    if (!in.IsObject() || !in.HasMember("name") || !in["name"].IsString() ||
        !in.HasMember("datatype") || !in["datatype"].IsString() || !in.HasMember("shape") ||
        !in["shape"].IsArray() || !in.HasMember("data"))
      throw CliError{kUsage, path + ": each input needs name, datatype, shape and data"};
    client::Tensor t;
    t.name = in["name"].GetString();
    t.datatype = in["datatype"].GetString();
    for (const auto& s : in["shape"].GetArray()) {
      if (!s.IsInt64()) throw CliError{kUsage, path + ": input " + t.name + " has a bad shape"};
      t.shape.push_back(s.GetInt64());
    }
    // Re-serialise the data member and let the library convert it.
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    in["data"].Accept(w);
    ClientStatus st = client::SetDataFromJson(t, std::string(buf.GetString(), buf.GetSize()));
    if (!st.ok) throw CliError{kUsage, path + ": " + st.message};
    out.push_back(std::move(t));
  }
  return out;
}

int Health(const Options& o, client::Client& c) {
  NoExtraArgs(o, 0);
  bool live = false, ready = false;
  Check(c.ServerLive(live), "health");
  Check(c.ServerReady(ready), "health");
  if (o.json) {
    std::printf("{\"live\":%s,\"ready\":%s}\n", live ? "true" : "false", ready ? "true" : "false");
  } else {
    std::printf("live: %s\nready: %s\n", live ? "yes" : "no", ready ? "yes" : "no");
  }
  return live && ready ? kOk : kServerError;
}

int Metadata(const Options& o, client::Client& c) {
  NoExtraArgs(o, 1);
  std::string json;
  if (o.args.empty()) {
    client::ServerMetadata m;
    Check(c.GetServerMetadata(m, &json), "server metadata");
    if (o.json)
      std::printf("%s\n", json.c_str());
    else
      PrintServerMetadata(m);
    return kOk;
  }
  client::ModelMetadata m;
  Check(c.GetModelMetadata(o.args[0], o.version, m, &json), "metadata of " + o.args[0]);
  if (o.json)
    std::printf("%s\n", json.c_str());
  else
    PrintModelMetadata(m);
  return kOk;
}

int Config(const Options& o, client::Client& c) {
  const std::string& model = Arg(o, 0, "a MODEL");
  NoExtraArgs(o, 1);
  std::string json;
  Check(c.GetModelConfig(model, o.version, json), "config of " + model);
  std::printf("%s\n", o.json ? json.c_str() : PrettyJson(json).c_str());
  return kOk;
}

int Infer(const Options& o, client::Client& c) {
  client::InferRequest req;
  req.model = Arg(o, 0, "a MODEL");
  NoExtraArgs(o, 1);
  req.version = o.version;
  req.id = o.request_id;
  req.inputs = ParseInputs(o);
  for (const auto& name : o.outputs) {
    client::RequestedOutput out;
    out.name = name;
    out.class_count = o.classification;
    req.outputs.push_back(std::move(out));
  }
  if (o.classification > 0 && o.outputs.empty())
    throw CliError{kUsage, "--classification needs --output NAME"};
  client::InferResult r;
  Check(c.Infer(req, r), "infer " + req.model);
  if (!r.ok()) {
    std::cerr << "infer: " << req.model << ": " << r.error << "\n";
    return kServerError;
  }
  PrintInferResult(r, o.json);
  return kOk;
}

int Index(const Options& o, client::Client& c) {
  NoExtraArgs(o, 0);
  std::vector<client::RepositoryEntry> entries;
  std::string json;
  Check(c.RepositoryIndex(entries, &json), "repository index");
  if (o.json)
    std::printf("%s\n", json.c_str());
  else
    PrintIndex(entries);
  return kOk;
}

int LoadUnload(const Options& o, client::Client& c, bool load) {
  const std::string& model = Arg(o, 0, "a MODEL");
  NoExtraArgs(o, 1);
  Check(load ? c.LoadModel(model) : c.UnloadModel(model),
        std::string(load ? "load " : "unload ") + model);
  if (o.json)
    std::printf("{\"model\":\"%s\",\"%s\":true}\n", model.c_str(), load ? "loaded" : "unloaded");
  else
    std::printf("%s %s\n", load ? "loaded" : "unloaded", model.c_str());
  return kOk;
}

int Stats(const Options& o, client::Client& c) {
  NoExtraArgs(o, 1);
  const std::string model = o.args.empty() ? "" : o.args[0];
  std::string json;
  Check(c.GetModelStatistics(model, o.version, json),
        "statistics" + (model.empty() ? std::string() : " of " + model));
  if (o.json)
    std::printf("%s\n", json.c_str());
  else
    PrintStatistics(json);
  return kOk;
}

}  // namespace

std::vector<client::Tensor> ParseInputs(const Options& o) {
  if (o.inputs.empty() && o.input_json.empty())
    throw CliError{kUsage, "infer needs --input NAME:DATATYPE:SHAPE:VALUES or --input-json FILE"};
  if (!o.inputs.empty() && !o.input_json.empty())
    throw CliError{kUsage, "give either --input or --input-json, not both"};
  if (!o.input_json.empty()) return InputsFromJsonFile(o.input_json);
  std::vector<client::Tensor> out;
  for (const auto& spec : o.inputs) out.push_back(ParseInputSpec(spec));
  return out;
}

int RunCommand(const Options& o, client::Client& c) {
  if (o.command != "infer" && (!o.inputs.empty() || !o.input_json.empty() || !o.outputs.empty()))
    throw CliError{kUsage, "--input, --input-json and --output belong to the infer command"};
  if (o.command == "health") return Health(o, c);
  if (o.command == "metadata") return Metadata(o, c);
  if (o.command == "config") return Config(o, c);
  if (o.command == "infer") return Infer(o, c);
  if (o.command == "index") return Index(o, c);
  if (o.command == "load") return LoadUnload(o, c, true);
  if (o.command == "unload") return LoadUnload(o, c, false);
  if (o.command == "stats") return Stats(o, c);
  throw CliError{kUsage, "unknown command '" + o.command + "' (see infer --help)"};
}

}  // namespace inferd::cli
