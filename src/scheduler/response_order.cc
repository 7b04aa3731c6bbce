#include "scheduler/response_order.h"

namespace inferd {

class ResponseOrder::OrderedSink final : public InferResponseSink {
 public:
  OrderedSink(std::shared_ptr<ResponseOrder> order, uint64_t seq)
      : order_(std::move(order)), seq_(seq) {}

  ~OrderedSink() override {
    if (!done_) Finish(Internal("the scheduler dropped the request without a final response"));
  }

  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (done_) return;
    done_ = final;
    order_->Record(seq_, std::move(response), final, Status::Ok());
  }

  void Finish(Status status) override {
    if (done_) return;
    done_ = true;
    order_->Record(seq_, nullptr, true, std::move(status));
  }

 private:
  const std::shared_ptr<ResponseOrder> order_;
  const uint64_t seq_;
  bool done_ = false;
};

std::unique_ptr<InferResponseSink> ResponseOrder::Wrap(std::unique_ptr<InferResponseSink> sink) {
  uint64_t seq;
  {
    MutexLock lock(mu_);
    seq = base_ + entries_.size();
    entries_.emplace_back().sink = std::move(sink);
  }
  return std::make_unique<OrderedSink>(shared_from_this(), seq);
}

size_t ResponseOrder::held() const {
  MutexLock lock(mu_);
  return entries_.size();
}

void ResponseOrder::Record(uint64_t seq, std::unique_ptr<InferResponse> response, bool final,
                           Status status) {
  MutexLock lock(mu_);
  Entry& entry = entries_[seq - base_];
  if (!final) {
    entry.partial.push_back(std::move(response));
  } else {
    entry.done = true;
    entry.last = std::move(response);
    entry.status = std::move(status);
  }
  if (delivering_) return;  // that thread delivers this too
  delivering_ = true;
  while (!entries_.empty() && (entries_.front().done || !entries_.front().partial.empty())) {
    Entry& head = entries_.front();
    std::vector<std::unique_ptr<InferResponse>> partial = std::move(head.partial);
    head.partial.clear();
    // Only the delivering thread pops entries: the head's sink stays put
    // while the lock is released.
    InferResponseSink* sink = head.sink.get();
    Entry finished;
    if (head.done) {
      finished = std::move(head);
      entries_.pop_front();
      ++base_;
    }
    lock.Unlock();
    for (auto& r : partial) sink->Send(std::move(r), /*final=*/false);
    if (finished.done) {
      if (finished.last) {
        sink->Send(std::move(finished.last), /*final=*/true);
      } else {
        sink->Finish(std::move(finished.status));
      }
      finished.sink.reset();
    }
    lock.Lock();
  }
  delivering_ = false;
}

}  // namespace inferd
