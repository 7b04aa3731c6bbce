// The Python backend's model and instance (libinferd_python.so).
//
// PythonModel: one loaded model version; checks the config once (refused
// parameters, model file) and holds what every instance needs.
// PythonInstance: one stub process (inferd_python_stub.py) and the thread
// that reads its messages. instance_execute sends the batch (each request on
// its own, inputs copied into the instance's "E" shared memory region) and
// waits for "exec_done"; the reader thread meanwhile handles the stub's
// other messages: responses sent through response senders (response
// factories), BLS calls into the server, cancellation queries, log lines.
//
// Threading: Execute runs on the instance's thread; everything the reader
// thread shares with it is guarded by mu_. A stub that exits, or does not
// return from execute within the model's execute_timeout_seconds, is killed:
// its requests get UNAVAILABLE and the model is reported unavailable
// (host->model_set_unavailable) with the reason.
// Errors: constructors and Execute throw inferd_backend::BackendError.
#pragma once

#include <rapidjson/document.h>
#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/backend_util.h"
#include "python/ipc.h"

namespace inferd_python {

class PythonModel {
 public:
  explicit PythonModel(const InferdModelInfo& info);

  const InferdModelInfo& info() const { return info_; }
  const std::string& model_file() const { return model_file_; }
  bool decoupled() const { return decoupled_; }
  int64_t execute_timeout_ms() const { return execute_timeout_ms_; }
  // Reports the model unavailable (once; later reasons are logged only).
  void SetUnavailable(const std::string& reason);

 private:
  const InferdModelInfo& info_;
  std::string model_file_;
  bool decoupled_ = false;
  int64_t execute_timeout_ms_ = 0;
  std::mutex mu_;
  bool unavailable_ = false;
};

// What BLS callbacks need after the instance may be gone: the channel and
// the "B" regions (BLS results lent to the stub).
struct StubLink {
  explicit StubLink(int fd) : channel(fd) {}
  Channel channel;
  std::mutex b_mu;
  std::vector<std::unique_ptr<Region>> b_regions;
  uint64_t next_b_id = 1;
};

class PythonInstance {
 public:
  PythonInstance(PythonModel& model, const InferdInstanceInfo& info);
  ~PythonInstance();
  void Execute(InferdRequest* const* requests, uint32_t n);

 private:
  struct Message {
    rapidjson::Document doc;
  };
  // A request the stub may still answer through its response sender.
  struct Pending {
    InferdRequest* request = nullptr;  // during Execute only
    InferdResponseFactory* factory = nullptr;
    bool final_sent = false;
  };

  void ReaderLoop();
  // Reads and handles one message (replies land in reply_); the caller
  // holds read_mu_.
  Channel::Received ReadOne(bool nonblocking);
  // Execute's wait for "exec_done": the instance thread reads the channel
  // itself (no thread switch on the way back), handling other messages too.
  Message ExecWait(int64_t timeout_ms);
  [[noreturn]] void TimedOut(std::unique_lock<std::mutex>& lock, const std::string& what,
                             int64_t timeout_ms);
  void Dispatch(Message m);
  void MapRegions(const rapidjson::Document& doc, std::vector<int>& fds);
  Message WaitReply(const char* type, int64_t timeout_ms, const std::string& what);
  void OnStubGone();
  void HandleSend(const rapidjson::Document& doc);
  void HandleIsCancelled(const rapidjson::Document& doc);
  void HandleBls(const rapidjson::Document& doc);
  // Sends `error` (a new one per request) through the factory; deletes it.
  void FailPending(Pending& p, InferdErrorCode code, const std::string& message);
  void StopStub();
  // Data of a tensor entry [name, dtype, shape, kind, id, offset, size].
  const uint8_t* EntryData(const rapidjson::Value& e);
  void ReleaseStubRegions(const rapidjson::Value& entries);
  void FillResponse(InferdResponse* response, const rapidjson::Value& entry);
  // Allocates each stub output of `outs` through `alloc` (request_output_alloc
  // or response_output_alloc, bound to their request or response) and copies
  // its bytes out of the stub's region.
  using OutputAlloc = std::function<InferdError*(
      const char* name, InferdDataType datatype, const int64_t* shape, uint32_t dims_count,
      uint64_t byte_size, InferdMemoryType* memory_type, int64_t* device_id, void** buffer)>;
  void CopyOutputs(const rapidjson::Value& outs, const OutputAlloc& alloc);
  void AnswerRequest(InferdRequest* r, const rapidjson::Value& entry);
  void AnswerWithParameters(InferdRequest* r, const rapidjson::Value& entry);
  std::string BuildExec(InferdRequest* const* requests, uint32_t n, uint64_t first_key,
                        std::vector<int>& fds);
  // Fails UNAVAILABLE once the stub is dead.
  void CheckAlive();
  // Fails a batch larger than the model's max_batch_size.
  void CheckBatchSize(InferdRequest* const* requests, uint32_t n);
  // Grows (replaces) the "E" region to `size`; returns the id of the one
  // replaced, for the stub to unmap.
  std::optional<uint64_t> EnsureExecRegion(uint64_t size);
  // Adds the batch to pending_ (with a response factory when decoupled) and
  // takes over reading the channel.
  void RegisterBatch(InferdRequest* const* requests, uint32_t n, uint64_t first_key);
  void SendExec(const std::string& message, const std::vector<int>& fds);
  // ExecWait; on error, fails the requests answered through a factory too.
  Message WaitExecDone(uint64_t first_key, uint32_t n);
  // The stub's execute raised: every request of the batch gets the error.
  void FailBatch(InferdRequest* const* requests, uint32_t n, uint64_t first_key,
                 const rapidjson::Value& error);
  // Answers one request from its "resps" entry (unless a factory took it over).
  void AnswerEntry(InferdRequest* request, uint64_t key, const rapidjson::Value& entry);
  // On Execute's way out: drops the batch's pending_ entries no response
  // sender still needs (failing the ones a dead stub never will answer).
  void SettleBatch(uint64_t first_key, uint32_t n);

  PythonModel& model_;
  std::string name_;
  std::string kind_;
  int32_t device_id_;
  pid_t pid_ = -1;
  std::shared_ptr<StubLink> link_;
  std::thread reader_;
  std::string text_;  // the last message read (under read_mu_)

  std::mutex read_mu_;  // who reads the channel: the reader, or Execute
  std::mutex mu_;
  std::condition_variable cv_;
  bool executing_ = false;  // Execute reads the channel; the reader thread waits
  std::optional<Message> reply_;
  bool gone_ = false;      // the stub process has exited (reaped)
  bool dead_ = false;      // no more work for the stub (exited, killed, timed out)
  bool stopping_ = false;  // unload in progress: an exit is expected
  bool ready_ = false;     // initialize() returned: an exit from now on is a failure
  std::string death_;      // why dead_
  std::map<uint64_t, Pending> pending_;
  uint64_t next_key_ = 1;

  std::mutex regions_mu_;                                     // taken alone, or inside mu_
  std::map<uint64_t, std::unique_ptr<Region>> stub_regions_;  // "S"

  // Instance thread only.
  std::unique_ptr<Region> exec_region_;  // "E"
  uint64_t next_e_id_ = 1;
};

}  // namespace inferd_python
