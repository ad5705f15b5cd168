// The host encoding cache and the submission owner: hits, patching, failures, bounded storage,
// and concurrent encodes (independent caches, and one owner-serialised cache).
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "simpler/wire/consume.hpp"
#include "simpler/wire/encoding_cache.hpp"
#include "simpler/wire/packet_pool.hpp"
#include "simpler/wire/submission.hpp"
#include "simpler/wire/transport.hpp"
#include "wire_test_util.hpp"

using namespace simpler;

namespace {

struct Call {
    PreparedInvocationView view = wt::view(1, 2, 2);
    TmrBindingRef binding = wt::binding();
    std::vector<ChipTensor> tensors = {wt::tile32(0x10000), wt::tile32(0x20000)};
    std::vector<std::uint64_t> scalars = {11, 22};

    InvocationStatus encode(const TmrEncodingCache& cache, TmrCandidate* out) const {
        return cache.encode(view, binding, tensors.data(), tensors.size(), scalars.data(), scalars.size(), out);
    }
    std::vector<std::uint8_t> reference() const {
        std::vector<std::uint8_t> p(tmr_invocation_size(view.tensor_count, view.scalar_count));
        REQUIRE(encode_tmr_invocation(view, binding, tensors.data(), tensors.size(), scalars.data(), scalars.size(),
                                      p.data(), p.size()) == InvocationStatus::Ok);
        return p;
    }
};

std::vector<std::uint8_t> bytes_of(const TmrCandidate& c) {
    const ByteSpan p = c.packet();
    return std::vector<std::uint8_t>(p.data, p.data + p.size);
}

class FailingRunner final : public AicpuPayloadRunner {
  public:
    int launch_aicpu_payload(const void*, std::size_t) noexcept override { return 7; }
};

}  // namespace

TEST_CASE("cache identity: a miss, a commit, then hits that patch addresses and scalars") {
    TmrEncodingCache cache;
    Call call;
    TmrCandidate c;
    REQUIRE(call.encode(cache, &c) == InvocationStatus::Ok);
    CHECK_FALSE(c.cache_hit());
    CHECK(bytes_of(c) == call.reference());
    CHECK(cache.template_bytes() == 0);  // nothing is committed yet
    TmrCandidate again;
    REQUIRE(call.encode(cache, &again) == InvocationStatus::Ok);
    CHECK_FALSE(again.cache_hit());  // an uncommitted candidate does not change the cache
    REQUIRE(cache.commit(c));
    CHECK(cache.template_bytes() == tmr_scalars_offset(2));
    CHECK_FALSE(cache.commit(c));  // at most once

    // Dynamic patching: new addresses and scalars, same structure -> hit, exact bytes.
    call.tensors[0].buffer.addr = 0x90000;
    call.tensors[1].buffer.addr = 0xa0000;
    call.tensors[1].owner_task_id = 1234;  // bookkeeping is not part of the structure
    call.scalars = {~0ull, 5};
    TmrCandidate hit;
    REQUIRE(call.encode(cache, &hit) == InvocationStatus::Ok);
    CHECK(hit.cache_hit());
    CHECK(bytes_of(hit) == call.reference());
    std::uint64_t prefix = 0;
    std::memcpy(&prefix, hit.block(), 8);
    CHECK(prefix == hit.packet_bytes());

    // Any structural change is a miss with correct bytes.
    auto miss_with = [&](auto mutate) {
        Call changed = call;
        mutate(changed);
        TmrCandidate m;
        REQUIRE(changed.encode(cache, &m) == InvocationStatus::Ok);
        CHECK_FALSE(m.cache_hit());
        CHECK(bytes_of(m) == changed.reference());
    };
    miss_with([](Call& k) { k.tensors[0].shapes[0] = 16; });
    miss_with([](Call& k) { k.tensors[0].strides[0] = 64; k.tensors[0].buffer.size = 8192; });
    miss_with([](Call& k) { k.tensors[1].start_offset = 1; k.tensors[1].buffer.size = 4100; });
    miss_with([](Call& k) { k.tensors[1].dtype = static_cast<std::uint8_t>(DataType::INT32); });
    miss_with([](Call& k) { k.tensors[1].buffer.size = 8192; });
    miss_with([](Call& k) { k.view.slot_generation = 2; });
    miss_with([](Call& k) { k.binding.context_generation = 10; });
    miss_with([](Call& k) { k.binding.device_binding_addr += 64; });
    miss_with([](Call& k) { k.view = wt::view(2, 2, 2); });
}

TEST_CASE("a hit still validates the current inputs") {
    TmrEncodingCache cache;
    Call call;
    TmrCandidate c;
    REQUIRE(call.encode(cache, &c) == InvocationStatus::Ok);
    REQUIRE(cache.commit(c));
    Call bad = call;
    bad.tensors[1].buffer.addr = 0;  // same structure, null address for a nonempty tensor
    TmrCandidate out;
    CHECK(bad.encode(cache, &out) == InvocationStatus::InvalidTensor);
    CHECK(out.empty());
    bad = call;
    bad.tensors[0].buffer.addr = ~0ull - 100;  // the 4096-byte view would wrap the address space
    CHECK(bad.encode(cache, &out) == InvocationStatus::InvalidTensor);
    CHECK(out.empty());
}

TEST_CASE("failures leave the cache and the caller's candidate unchanged") {
    TmrEncodingCache cache;
    Call call;
    TmrCandidate first;
    REQUIRE(call.encode(cache, &first) == InvocationStatus::Ok);
    const auto first_bytes = bytes_of(first);
    REQUIRE(cache.commit(first));
    const std::size_t tb = cache.template_bytes();

    // Encoding failure: the output candidate and the template stay as they were.
    TmrCandidate held;
    REQUIRE(call.encode(cache, &held) == InvocationStatus::Ok);
    const auto held_bytes = bytes_of(held);
    Call bad = call;
    bad.tensors[0].address_space = 0;
    bad.tensors[0].shapes[0] = 8;  // also a structural change, so the miss path runs
    CHECK(bad.encode(cache, &held) == InvocationStatus::InvalidTensor);
    CHECK(bytes_of(held) == held_bytes);
    bad = call;
    bad.scalars.pop_back();
    CHECK(bad.encode(cache, &held) == InvocationStatus::InvalidCounts);
    CHECK(bytes_of(held) == held_bytes);
    CHECK(cache.template_bytes() == tb);
    TmrCandidate probe;
    REQUIRE(call.encode(cache, &probe) == InvocationStatus::Ok);
    CHECK(probe.cache_hit());

    // Submission failure: the owner does not commit, so the old template still hits.
    TmrSubmissionOwner owner;
    REQUIRE(owner.publish(call.view, call.binding) == InvocationStatus::Ok);
    PacketBufferPool pool;
    PacketQueue queue;
    CopyingAicpuRunner runner(pool, queue);
    REQUIRE(owner.submit(runner, call.tensors.data(), 2, call.scalars.data(), 2).ok());
    const std::size_t owner_tb = owner.template_bytes();
    FailingRunner failing;
    Call other = call;
    other.tensors[0].shapes[0] = 16;
    const EnqueueOutcome r = owner.submit(failing, other.tensors.data(), 2, other.scalars.data(), 2);
    CHECK(r.status == InvocationStatus::Ok);
    CHECK(r.launch_rc == 7);
    CHECK_FALSE(r.ok());
    CHECK(owner.template_bytes() == owner_tb);
    // The next good submission of the original structure is still a hit: queued bytes prove it.
    REQUIRE(owner.submit(runner, call.tensors.data(), 2, call.scalars.data(), 2).ok());
    CHECK(queue.size() == 2);
    CHECK(first_bytes == call.reference());
}

TEST_CASE("commit accepts only this cache's candidates") {
    TmrEncodingCache a, b;
    Call call;
    TmrCandidate c;
    REQUIRE(call.encode(a, &c) == InvocationStatus::Ok);
    CHECK_FALSE(b.commit(c));
    CHECK(b.template_bytes() == 0);
    TmrCandidate empty;
    CHECK_FALSE(a.commit(empty));
    CHECK(a.commit(c));
}

TEST_CASE("template storage does not grow over 10,000 encodes") {
    TmrEncodingCache cache;
    Call call;
    std::size_t first = 0;
    for (int i = 0; i < 10000; ++i) {
        call.tensors[0].buffer.addr = 0x10000 + static_cast<std::uint64_t>(i % 64) * 4096;
        call.scalars[0] = static_cast<std::uint64_t>(i);
        if (i % 1000 == 0) call.tensors[1].shapes[0] = (i / 1000) % 2 ? 16 : 32;  // some misses too
        TmrCandidate c;
        REQUIRE(call.encode(cache, &c) == InvocationStatus::Ok);
        REQUIRE(cache.commit(c));
        if (i == 0) first = cache.template_bytes();
        REQUIRE(cache.template_bytes() == first);
    }
    CHECK(first == tmr_scalars_offset(2));
}

TEST_CASE("independent caches encode concurrently without a shared lock") {
    constexpr int kThreads = 4;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([t, &failures] {
            TmrEncodingCache cache;
            Call call;
            call.view = wt::view(t, 2, 2);
            for (int i = 0; i < 2000; ++i) {
                call.tensors[0].buffer.addr = 0x100000ull * static_cast<std::uint64_t>(t + 1) + static_cast<std::uint64_t>(i) * 64;
                call.scalars[1] = static_cast<std::uint64_t>(i);
                TmrCandidate c;
                if (call.encode(cache, &c) != InvocationStatus::Ok || bytes_of(c) != call.reference()) ++failures;
                cache.commit(c);
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(failures.load() == 0);
}

TEST_CASE("one owner serialises concurrent submissions, replacement and close") {
    TmrSubmissionOwner owner;
    PacketBufferPool pool;
    PacketQueue queue;
    CopyingAicpuRunner runner(pool, queue);
    const Call base;
    REQUIRE(owner.publish(base.view, base.binding) == InvocationStatus::Ok);
    std::atomic<int> submitted{0}, stale{0}, bad{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
            Call call;
            for (int i = 0; i < 1500; ++i) {
                call.tensors[0].buffer.addr = 0x10000 + static_cast<std::uint64_t>(t) * 0x1000000 + static_cast<std::uint64_t>(i) * 64;
                call.scalars[0] = (static_cast<std::uint64_t>(t) << 32) | static_cast<std::uint64_t>(i);
                const EnqueueOutcome r = owner.submit(runner, call.tensors.data(), 2, call.scalars.data(), 2);
                if (r.ok()) ++submitted;
                else if (r.status == InvocationStatus::StaleCallable) ++stale;
                else ++bad;
            }
        });
    }
    // A replacer republishes with new generations and closes/reopens while submissions run.
    std::thread replacer([&] {
        std::uint64_t gen = 1;
        while (!stop.load()) {
            owner.close();
            owner.publish(wt::view(1, 2, 2, ++gen), base.binding);
            std::this_thread::yield();
        }
    });
    for (auto& th : threads) th.join();
    stop = true;
    replacer.join();
    CHECK(bad.load() == 0);
    CHECK(submitted.load() + stale.load() == 4500);
    CHECK(queue.size() == static_cast<std::size_t>(submitted.load()));
    // Every queued block is a complete, valid packet of one published generation.
    auto storage = std::make_unique<EntryArgsStorage>();
    std::size_t checked = 0;
    while (auto b = queue.try_pop()) {
        ByteSpan packet;
        REQUIRE(tmr_block_packet(b->data(), b->size(), &packet) == InvocationStatus::Ok);
        InvocationHeader h{};
        REQUIRE(packet.read_at(0, &h));
        REQUIRE(consume_tmr_invocation(packet, wt::view(1, 2, 2, h.generation), base.binding, storage.get()) ==
                InvocationStatus::Ok);
        ++checked;
    }
    CHECK(checked == static_cast<std::size_t>(submitted.load()));
    CHECK(pool.outstanding() == 0);
}
