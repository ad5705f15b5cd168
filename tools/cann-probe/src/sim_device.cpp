// Simulated device side: the copy-on-enqueue runner of simpler/wire/packet_pool.hpp feeds a
// queue; one consumer thread (the simulated AICPU) waits on the gate, then takes each block in
// FIFO order, admits, decodes and consumes it with simpler's consume_tmr_invocation against the
// published trusted views, and writes the checksum and status into result slot k.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "probe_device.hpp"
#include "simpler/wire/consume.hpp"
#include "simpler/wire/packet_pool.hpp"
#include "simpler/wire/transport.hpp"

namespace probe {
namespace {

class SimDevice final : public ProbeDevice {
  public:
    explicit SimDevice(std::chrono::milliseconds gate_timeout) : gate_timeout_(gate_timeout), slots_(kSlots) {
        thread_ = std::thread([this] { consume_loop(); });
    }
    ~SimDevice() override {
        {
            std::lock_guard<std::mutex> lk(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
        queue_.clear();
    }

    const char* variant() const noexcept override { return "sim"; }

    simpler::TmrBindingRef publish(const simpler::PreparedInvocationView* views, std::size_t n,
                                   std::uint64_t context_generation) override {
        std::lock_guard<std::mutex> lk(mu_);
        views_.assign(views, views + n);
        binding_ = simpler::TmrBindingRef{reinterpret_cast<std::uint64_t>(this), context_generation};
        return binding_;
    }

    simpler::AicpuPayloadRunner& runner() override { return runner_; }

    void release_gate() override {
        {
            std::lock_guard<std::mutex> lk(mu_);
            gate_ = true;
        }
        cv_.notify_all();
    }

    bool wait_done(std::size_t expected, std::chrono::milliseconds timeout) override {
        std::unique_lock<std::mutex> lk(mu_);
        return cv_.wait_for(lk, timeout, [&] { return consumed_ >= expected || gate_timed_out_; }) &&
               !gate_timed_out_;
    }

    bool gate_timed_out() const override {
        std::lock_guard<std::mutex> lk(mu_);
        return gate_timed_out_;
    }

    std::vector<ResultSlot> results() const override {
        std::lock_guard<std::mutex> lk(mu_);
        return slots_;
    }

  private:
    void consume_loop() {
        {
            std::unique_lock<std::mutex> lk(mu_);
            if (!cv_.wait_for(lk, gate_timeout_, [&] { return gate_ || stop_; })) {
                gate_timed_out_ = true;  // a lost gate fails the run instead of hanging it
                cv_.notify_all();
                return;
            }
        }
        auto storage = std::make_unique<simpler::EntryArgsStorage>();
        for (;;) {
            {
                std::lock_guard<std::mutex> lk(mu_);
                if (stop_) return;
            }
            std::optional<simpler::PooledBuffer> block = queue_.wait_pop(std::chrono::milliseconds(20));
            if (!block) continue;
            ResultSlot r;
            r.status = static_cast<std::int32_t>(consume(*block, storage.get(), &r.checksum));
            std::lock_guard<std::mutex> lk(mu_);
            if (consumed_ < slots_.size()) slots_[consumed_] = r;
            ++consumed_;
            cv_.notify_all();
        }
    }

    simpler::InvocationStatus consume(const simpler::PooledBuffer& block, simpler::EntryArgsStorage* storage,
                                      std::uint64_t* checksum) {
        simpler::ByteSpan packet;
        simpler::InvocationStatus s = simpler::tmr_block_packet(block.data(), block.size(), &packet);
        if (s != simpler::InvocationStatus::Ok) return s;
        simpler::InvocationHeader h;
        if (!packet.read_at(0, &h)) return simpler::InvocationStatus::InvalidSize;
        simpler::PreparedInvocationView view{};
        simpler::TmrBindingRef binding{};
        {
            std::lock_guard<std::mutex> lk(mu_);
            bool found = false;
            for (const auto& v : views_)
                if (v.callable_id == h.callable_id) view = v, found = true;
            if (!found) return simpler::InvocationStatus::StaleCallable;
            binding = binding_;
        }
        s = simpler::consume_tmr_invocation(packet, view, binding, storage);
        if (s != simpler::InvocationStatus::Ok) return s;
        *checksum = invocation_checksum(storage->callable_id, storage->tensors,
                                        static_cast<std::size_t>(storage->tensor_count), storage->scalars,
                                        static_cast<std::size_t>(storage->scalar_count));
        return s;
    }

    std::chrono::milliseconds gate_timeout_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool gate_ = false, stop_ = false, gate_timed_out_ = false;
    std::size_t consumed_ = 0;
    std::vector<ResultSlot> slots_;
    std::vector<simpler::PreparedInvocationView> views_;
    simpler::TmrBindingRef binding_{};
    simpler::PacketBufferPool pool_;
    simpler::PacketQueue queue_;
    simpler::CopyingAicpuRunner runner_{pool_, queue_};
    std::thread thread_;
};

}  // namespace

std::unique_ptr<ProbeDevice> make_device(std::chrono::milliseconds gate_timeout) {
    return std::make_unique<SimDevice>(gate_timeout);
}

}  // namespace probe
