// onnx: ONNX models on OpenCV's DNN module (4.6, CPU), behind the inferd
// backend ABI. ONNX Runtime is not packaged in Debian 12; OpenCV is.
//
// Model file: <version dir>/<default_model_filename, else model.onnx>,
// rewritten in memory when it loads (onnx_rewrite.h: Identity nodes that
// torch 1.13's exporter emits for shared constants are rewired away).
// Inputs and outputs are matched by name to the graph's; outputs fall back
// to the order of the graph's outputs when the names differ. Every input and
// output is FP32: OpenCV DNN computes in FP32 only.
//
// Batching: requests whose inputs agree past the batch dimension are
// concatenated along dimension 0, run once, and split back by rows; a
// failed concatenated run is retried request by request.
//
// Parameters: INTRA_OP_THREAD_COUNT (default: hardware threads / instance
// count) sets OpenCV's thread count, which is process-wide (the last model
// loaded wins).
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <optional>
#include <sstream>

#include "common/backend_util.h"
#include "onnx/onnx_rewrite.h"

namespace {

using namespace inferd_backend;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) Fail(INFERD_ERROR_NOT_FOUND, "model file '" + path + "' does not exist or is unreadable");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string CvMessage(const cv::Exception& e) {
  std::string m = e.err.empty() ? e.what() : e.err;
  if (m.size() > 400) m = m.substr(0, 400) + "...";
  return m;
}

cv::dnn::Net ReadNet(const std::string& bytes, const std::string& path) {
  try {
    cv::dnn::Net net = cv::dnn::readNetFromONNX(bytes.data(), bytes.size());
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    return net;
  } catch (const cv::Exception& e) {
    ThrowInvalidArgument("cannot load ONNX model '" + path + "': " + CvMessage(e));
  }
}

class OnnxModel {
 public:
  explicit OnnxModel(const InferdModelInfo& info) : batching_(info.max_batch_size > 0) {
    const std::string file = info.default_model_filename && *info.default_model_filename
                                 ? info.default_model_filename
                                 : "model.onnx";
    path_ = std::string(info.version_directory) + "/" + file;
    for (uint32_t i = 0; i < info.input_count; ++i) {
      CheckFp32("input", info.inputs[i]);
      inputs_.push_back(info.inputs[i].name);
    }
    for (uint32_t i = 0; i < info.output_count; ++i) CheckFp32("output", info.outputs[i]);
    if (info.control_count > 0)
      ThrowInvalidArgument("onnx backend: sequence control inputs are not supported");
    try {
      auto rewritten = inferd_onnx_backend::RemoveIdentityNodes(ReadFile(path_));
      bytes_ = std::move(rewritten.model);
      if (rewritten.identities_removed > 0) {
        Host().log(INFERD_LOG_INFO,
                   ("onnx: model '" + std::string(info.name) + "': rewired " +
                    std::to_string(rewritten.identities_removed) + " Identity nodes")
                       .c_str());
      }
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const BackendError*>(&e)) throw;
      ThrowInvalidArgument("cannot load ONNX model '" + path_ + "': " + e.what());
    }
    first_ = ReadNet(bytes_, path_);
    // Config outputs by name if the graph has them all, else in order.
    const std::vector<std::string> graph_outputs = first_->getUnconnectedOutLayersNames();
    for (uint32_t i = 0; i < info.output_count; ++i) outputs_.push_back(info.outputs[i].name);
    const bool by_name = std::all_of(outputs_.begin(), outputs_.end(), [&](const std::string& n) {
      return std::find(graph_outputs.begin(), graph_outputs.end(), n) != graph_outputs.end();
    });
    if (by_name) {
      layers_ = outputs_;
    } else if (graph_outputs.size() == outputs_.size()) {
      layers_ = graph_outputs;
    } else {
      ThrowInvalidArgument("onnx backend: the config has " + std::to_string(outputs_.size()) +
                           " outputs, the graph " + std::to_string(graph_outputs.size()));
    }
    const unsigned hw = UsableCpuCount();  // the server's --cpu-set
    const int64_t per_instance = std::max<int64_t>(1, hw / std::max(1u, info.instance_count));
    cv::setNumThreads(
        static_cast<int>(IntParameter(info, "INTRA_OP_THREAD_COUNT", per_instance, 1, 1024)));
  }

  bool batching() const { return batching_; }
  const std::vector<std::string>& inputs() const { return inputs_; }
  const std::vector<std::string>& outputs() const { return outputs_; }
  const std::vector<std::string>& layers() const { return layers_; }  // graph names of outputs

  cv::dnn::Net NewNet() {
    if (first_) {
      cv::dnn::Net net = *first_;
      first_.reset();
      return net;
    }
    return ReadNet(bytes_, path_);
  }

 private:
  static void CheckFp32(const char* what, const InferdTensorSpec& t) {
    if (t.datatype != INFERD_TYPE_FP32) {
      ThrowInvalidArgument(std::string("onnx backend: ") + what + " '" + t.name + "' is " +
                           TypeName(t.datatype) + "; OpenCV DNN runs FP32 only");
    }
  }

  bool batching_;
  std::string path_, bytes_;
  std::vector<std::string> inputs_, outputs_, layers_;
  std::optional<cv::dnn::Net> first_;
};

struct Item {
  Request request;
  std::vector<InferdTensor> inputs;
  int64_t rows = 0;
};

class OnnxInstance {
 public:
  OnnxInstance(OnnxModel& model, const InferdInstanceInfo& info) : model_(model) {
    if (info.kind == INFERD_INSTANCE_GPU) {
      Fail(INFERD_ERROR_UNIMPLEMENTED,
           std::string("instance '") + info.name + "': the onnx backend runs on the CPU only");
    }
    net_ = model.NewNet();
  }

  void Execute(InferdRequest* const* requests, uint32_t n) {
    std::vector<Item> items;
    items.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
      Item item{Request(requests[i]), {}, 0};
      InferdError* e = Guard([&] { Gather(item); });
      if (e != nullptr) {
        Host().request_set_error(requests[i], e);
        continue;
      }
      items.push_back(std::move(item));
    }
    if (!model_.batching()) {
      for (auto& item : items) Run({&item});
      return;
    }
    std::map<std::vector<int64_t>, std::vector<Item*>> groups;
    for (auto& item : items) {
      std::vector<int64_t> signature;
      for (const auto& t : item.inputs)
        signature.insert(signature.end(), t.shape + 1, t.shape + t.dims_count);
      groups[signature].push_back(&item);
    }
    for (auto& [signature, group] : groups) {
      if (!Run(group) && group.size() > 1) {
        for (Item* item : group) Run({item});
      }
    }
  }

 private:
  void Gather(Item& item) const {
    for (const auto& name : model_.inputs()) {
      InferdTensor t{};
      if (!item.request.FindInput(name.c_str(), &t))
        ThrowInvalidArgument("the model needs input '" + name + "'");
      if (t.dims_count < 2) {
        ThrowInvalidArgument("input '" + name + "': OpenCV DNN needs at least 2 dimensions, got " +
                             ShapeString(t.shape, t.dims_count));
      }
      if (model_.batching()) {
        if (item.inputs.empty()) {
          item.rows = t.shape[0];
        } else if (t.shape[0] != item.rows) {
          ThrowInvalidArgument("input '" + name + "' has batch size " + std::to_string(t.shape[0]) +
                               ", other inputs " + std::to_string(item.rows));
        }
      }
      uint64_t elements = 1;
      for (uint32_t d = 0; d < t.dims_count; ++d) elements *= static_cast<uint64_t>(t.shape[d]);
      if (elements * sizeof(float) != t.byte_size) {
        ThrowInvalidArgument("input '" + name + "': " + std::to_string(t.byte_size) +
                             " bytes do not fit FP32 shape " + ShapeString(t.shape, t.dims_count));
      }
      item.inputs.push_back(t);
    }
  }

  static std::vector<int> Sizes(const int64_t* shape, uint32_t n) {
    std::vector<int> s;
    for (uint32_t i = 0; i < n; ++i) {
      if (shape[i] > INT32_MAX) ThrowInvalidArgument("dimension too large for OpenCV");
      s.push_back(static_cast<int>(shape[i]));
    }
    return s;
  }

  bool Run(const std::vector<Item*>& group) {
    std::string error;
    InferdErrorCode code = INFERD_ERROR_INVALID_ARGUMENT;
    try {
      int64_t rows = 0;
      for (const Item* item : group) rows += item->rows;
      std::vector<cv::Mat> blobs;  // keep the inputs alive through forward()
      for (size_t i = 0; i < model_.inputs().size(); ++i) {
        const InferdTensor& first = group[0]->inputs[i];
        std::vector<int> sizes = Sizes(first.shape, first.dims_count);
        if (group.size() == 1) {
          blobs.emplace_back(static_cast<int>(sizes.size()), sizes.data(), CV_32F,
                             const_cast<void*>(first.buffer));
        } else {
          sizes[0] = static_cast<int>(rows);
          cv::Mat m(static_cast<int>(sizes.size()), sizes.data(), CV_32F);
          char* dst = m.ptr<char>();
          for (const Item* item : group) {
            std::memcpy(dst, item->inputs[i].buffer, item->inputs[i].byte_size);
            dst += item->inputs[i].byte_size;
          }
          blobs.push_back(m);
        }
        net_.setInput(blobs.back(), model_.inputs()[i]);
      }
      std::vector<cv::Mat> outs;
      net_.forward(outs, model_.layers());
      Scatter(group, rows, outs);
      return true;
    } catch (const BackendError& e) {
      code = e.code();
      error = e.what();
    } catch (const cv::Exception& e) {
      error = "the model rejected the request: " + CvMessage(e);
    } catch (const std::bad_alloc&) {
      code = INFERD_ERROR_RESOURCE_EXHAUSTED;
      error = "out of memory running the model";
    } catch (const std::exception& e) {
      code = INFERD_ERROR_INTERNAL;
      error = e.what();
    }
    if (group.size() == 1) group[0]->request.SetError(code, error);
    return false;
  }

  void Scatter(const std::vector<Item*>& group, int64_t rows, const std::vector<cv::Mat>& outs) {
    if (outs.size() != model_.outputs().size()) {
      Fail(INFERD_ERROR_INTERNAL, "the network returned " + std::to_string(outs.size()) +
                                      " outputs, expected " +
                                      std::to_string(model_.outputs().size()));
    }
    for (size_t o = 0; o < outs.size(); ++o) {
      const cv::Mat& m = outs[o];
      if (m.type() != CV_32F || !m.isContinuous()) {
        Fail(INFERD_ERROR_INTERNAL,
             "output '" + model_.outputs()[o] + "' is not a dense FP32 tensor");
      }
      if (model_.batching() && (m.dims < 1 || m.size[0] != rows)) {
        Fail(INFERD_ERROR_INTERNAL, "output '" + model_.outputs()[o] + "' has " +
                                        std::to_string(m.size[0]) + " rows, expected " +
                                        std::to_string(rows));
      }
    }
    int64_t row = 0;
    for (const Item* item : group) {
      InferdError* e = Guard([&] {
        for (size_t o = 0; o < outs.size(); ++o) {
          const std::string& name = model_.outputs()[o];
          if (!item->request.OutputRequested(name.c_str())) continue;
          const cv::Mat& m = outs[o];
          std::vector<int64_t> shape(m.size.p, m.size.p + m.dims);
          size_t bytes = m.total() * sizeof(float);
          const char* src = m.ptr<char>();
          if (model_.batching()) {
            const size_t row_bytes = rows > 0 ? bytes / static_cast<size_t>(rows) : 0;
            shape[0] = item->rows;
            src += row_bytes * static_cast<size_t>(row);
            bytes = row_bytes * static_cast<size_t>(item->rows);
          }
          void* dst = item->request.AllocateOutput(name.c_str(), INFERD_TYPE_FP32, shape, bytes);
          if (bytes) std::memcpy(dst, src, bytes);
        }
      });
      if (e != nullptr) Host().request_set_error(item->request.get(), e);
      row += item->rows;
    }
  }

  OnnxModel& model_;
  cv::dnn::Net net_;
};

}  // namespace

extern "C" INFERD_BACKEND_EXPORT const InferdBackendApi* inferd_backend_entry(uint32_t) {
  return &BackendTable<OnnxModel, OnnxInstance>::kApi;
}
