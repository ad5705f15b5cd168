#include "comm_host.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "simpler/comm_atomic.hpp"
#include "simpler/dtype.hpp"

namespace simpler::chip {
namespace {

int refuse(char* error, std::uint64_t error_len, const char* fmt, ...) noexcept {
    if (error != nullptr && error_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(error, error_len, fmt, ap);
        va_end(ap);
    }
    return 1;
}

unsigned long long ull(std::uint64_t v) noexcept { return static_cast<unsigned long long>(v); }

// The element size of an atomic add of DataType `code`, or 0 when it has none.
std::uint64_t add_size(std::uint32_t code) noexcept {
    switch (static_cast<DataType>(code)) {
        case DataType::INT8:
        case DataType::UINT8: return 1;
        case DataType::FLOAT16:
        case DataType::BFLOAT16:
        case DataType::INT16:
        case DataType::UINT16: return 2;
        case DataType::FLOAT32:
        case DataType::INT32:
        case DataType::UINT32: return 4;
        case DataType::INT64:
        case DataType::UINT64: return 8;
        default: return 0;
    }
}

template <class T>
void add_run(unsigned char* at, const unsigned char* in, std::uint64_t nbytes) noexcept {
    for (std::uint64_t k = 0; k < nbytes; k += sizeof(T)) {
        T v;
        std::memcpy(&v, in + k, sizeof v);
        atomic_add(reinterpret_cast<T*>(at + k), v);
    }
}

void add(std::uint32_t code, unsigned char* at, const unsigned char* in, std::uint64_t nbytes) noexcept {
    switch (static_cast<DataType>(code)) {
        case DataType::FLOAT32: add_run<float>(at, in, nbytes); break;
        case DataType::FLOAT16: add_run<half>(at, in, nbytes); break;
        case DataType::BFLOAT16: add_run<bfloat16>(at, in, nbytes); break;
        case DataType::INT8: add_run<std::int8_t>(at, in, nbytes); break;
        case DataType::INT16: add_run<std::int16_t>(at, in, nbytes); break;
        case DataType::INT32: add_run<std::int32_t>(at, in, nbytes); break;
        case DataType::INT64: add_run<std::int64_t>(at, in, nbytes); break;
        case DataType::UINT8: add_run<std::uint8_t>(at, in, nbytes); break;
        case DataType::UINT16: add_run<std::uint16_t>(at, in, nbytes); break;
        case DataType::UINT32: add_run<std::uint32_t>(at, in, nbytes); break;
        case DataType::UINT64: add_run<std::uint64_t>(at, in, nbytes); break;
        default: break;  // refused by the checks
    }
}

}  // namespace

int apply_host_request(const CommHostRequest& r, unsigned char* window, std::uint64_t window_nbytes, char* error,
                       std::uint64_t error_len) noexcept {
    const bool notify = r.op == CommHostOp::NotifyAdd || r.op == CommHostOp::NotifySet;
    if (!notify && r.op != CommHostOp::Read && r.op != CommHostOp::Write && r.op != CommHostOp::AtomicAdd)
        return refuse(error, error_len, "unknown host request op %u", static_cast<unsigned>(r.op));
    if (r.run_count > 0 && r.runs == nullptr)
        return refuse(error, error_len, "a request of %llu runs has no runs", ull(r.run_count));
    if (window == nullptr && window_nbytes > 0) return refuse(error, error_len, "the window has no memory");
    // the element alignment the op needs, relative to the window's start (and the window's address)
    std::uint64_t align = 1;
    if (r.op == CommHostOp::AtomicAdd) {
        align = add_size(r.dtype);
        if (align == 0) return refuse(error, error_len, "atomic add of DataType code %u is not supported", r.dtype);
    } else if (notify) {
        align = sizeof(std::int32_t);
        if (r.run_count != 1 || r.runs[0].nbytes != sizeof(std::int32_t))
            return refuse(error, error_len, "a notify names one 4-byte INT32 cell, got %llu runs", ull(r.run_count));
        if (r.value < INT32_MIN || r.value > INT32_MAX)
            return refuse(error, error_len, "a notify's value must be an INT32, got %lld",
                          static_cast<long long>(r.value));
    }
    if (align > 1 && reinterpret_cast<std::uintptr_t>(window) % align != 0)
        return refuse(error, error_len, "the window's address is not aligned to %llu bytes", ull(align));
    std::uint64_t total = 0;
    for (std::uint64_t i = 0; i < r.run_count; ++i) {
        const CommHostRun run = r.runs[i];
        if (run.offset > window_nbytes || run.nbytes > window_nbytes - run.offset)
            return refuse(error, error_len, "bytes [%llu, +%llu) lie outside the window's %llu bytes", ull(run.offset),
                          ull(run.nbytes), ull(window_nbytes));
        if (run.offset % align != 0 || run.nbytes % align != 0)
            return refuse(error, error_len, "bytes [%llu, +%llu) are not whole %llu-byte elements", ull(run.offset),
                          ull(run.nbytes), ull(align));
        total += run.nbytes;
    }
    if (!notify) {
        if (total != r.nbytes)
            return refuse(error, error_len, "the runs hold %llu bytes, the request says %llu", ull(total),
                          ull(r.nbytes));
        if (r.nbytes > 0 && r.data == nullptr)
            return refuse(error, error_len, "a request of %llu bytes has no data", ull(r.nbytes));
    }

    if (notify) {
        auto* cell = reinterpret_cast<std::int32_t*>(window + r.runs[0].offset);
        const auto value = static_cast<std::int32_t>(r.value);
        if (r.op == CommHostOp::NotifySet)
            __atomic_store_n(cell, value, __ATOMIC_SEQ_CST);
        else
            __atomic_fetch_add(cell, value, __ATOMIC_SEQ_CST);  // wraps around, as the kernels' own
        return 0;
    }
    auto* data = static_cast<unsigned char*>(r.data);
    std::uint64_t at = 0;
    for (std::uint64_t i = 0; i < r.run_count; ++i) {
        const CommHostRun run = r.runs[i];
        if (run.nbytes == 0) continue;  // (data may be null when every run is empty)
        unsigned char* mem = window + run.offset;
        if (r.op == CommHostOp::Read)
            std::memcpy(data + at, mem, run.nbytes);
        else if (r.op == CommHostOp::Write)
            std::memcpy(mem, data + at, run.nbytes);
        else
            add(r.dtype, mem, data + at, run.nbytes);
        at += run.nbytes;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);  // applied before the reply leaves
    return 0;
}

}  // namespace simpler::chip
