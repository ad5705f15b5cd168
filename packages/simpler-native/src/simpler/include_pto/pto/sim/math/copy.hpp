// The byte copies of TLOAD and TSTORE (copy_forward, copy_stream), where a plain memcpy is not the
// fastest way on the host.
//
// copy_forward: glibc's memmove copies a block of 2-8 KiB back to front when source and
// destination sit at the same offset in their 4 KiB pages (to avoid the false store-to-load
// dependencies of 4 KiB aliasing). A tile's buffer and a row of a large tensor are often both
// page aligned, and a source in main memory read back to front loses the hardware prefetcher:
// the 16M-element add's TLOADs (32 KiB from DRAM into a Vec tile) took 30-40% more time that
// way than front to back. copy_forward always copies front to back, four vectors at a time (a
// loop of plain vector moves, which valgrind counts as instructions, unlike `rep movsb`).
//
// copy_stream: a store that misses the cache first reads the line it writes (64
// bytes read per 64 written); a non-temporal (streaming) store writes the line without reading
// it and without keeping it in the cache, as glibc's memcpy does above its own (multi-MiB)
// threshold. TSTORE uses it for dense runs of at least kStreamBytes: the 16M-element add writes
// 64 MiB that no later instruction of the program reads. A run that a later TLOAD reads back then
// comes from memory rather than the cache, so short runs keep the plain copy. The bytes written
// are the same either way; the sfence at the end orders the streaming stores before the
// instruction returns (before the task's completion is signalled to other threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pto {
namespace sim {
namespace math {

// Runs of this many bytes or more are stored with streaming stores (copy_stream).
inline constexpr std::size_t kStreamBytes = 32u << 10;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PTO_SIM_MATH_STREAM 1
#else
#define PTO_SIM_MATH_STREAM 0
#endif

#if PTO_SIM_MATH_STREAM
namespace detail {
#if defined(__AVX512F__)
typedef long long copy_vec __attribute__((vector_size(64)));
#elif defined(__AVX__)
typedef long long copy_vec __attribute__((vector_size(32)));
#else
typedef long long copy_vec __attribute__((vector_size(16)));
#endif

// One streaming store of a vector to a 16/32/64-byte aligned address (GCC's builtins under
// the <immintrin.h> stream intrinsics, which this header does not include; clang's generic one).
template <class V>
inline void stream_store(V* p, V v) noexcept {
#if defined(__clang__)
    __builtin_nontemporal_store(v, p);
#elif defined(__AVX512F__)
    __builtin_ia32_movntdq512(p, v);
#elif defined(__AVX__)
    __builtin_ia32_movntdq256(p, v);
#else
    __builtin_ia32_movntdq(p, v);
#endif
}
}  // namespace detail
#endif

// dst[0, n) = src[0, n) (no overlap), front to back.
inline void copy_forward(void* dst, const void* src, std::size_t n) noexcept {
#if PTO_SIM_MATH_STREAM
    using vec_t = detail::copy_vec;
    constexpr std::size_t kStep = 4 * sizeof(vec_t);
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (; n >= kStep; n -= kStep, d += kStep, s += kStep) {
        vec_t v0, v1, v2, v3;
        std::memcpy(&v0, s, sizeof v0);
        std::memcpy(&v1, s + sizeof v0, sizeof v1);
        std::memcpy(&v2, s + 2 * sizeof v0, sizeof v2);
        std::memcpy(&v3, s + 3 * sizeof v0, sizeof v3);
        // The register constraint keeps the compiler from turning the loop back into a memcpy call.
        __asm__("" : "+x"(v0), "+x"(v1), "+x"(v2), "+x"(v3));
        std::memcpy(d, &v0, sizeof v0);
        std::memcpy(d + sizeof v0, &v1, sizeof v1);
        std::memcpy(d + 2 * sizeof v0, &v2, sizeof v2);
        std::memcpy(d + 3 * sizeof v0, &v3, sizeof v3);
    }
    std::memcpy(d, s, n);
#else
    std::memcpy(dst, src, n);
#endif
}

// dst[0, n) = src[0, n) (no overlap), the bytes from the first 64-byte boundary of dst on with
// streaming stores.
inline void copy_stream(void* dst, const void* src, std::size_t n) noexcept {
#if PTO_SIM_MATH_STREAM
    using vec_t = detail::copy_vec;
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(d) & 63)) & 63;
    if (head > n) head = n;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        for (std::size_t o = 0; o < 64; o += sizeof(vec_t)) {
            vec_t v;
            std::memcpy(&v, s + o, sizeof v);
            detail::stream_store(reinterpret_cast<vec_t*>(d + o), v);
        }
    }
    __builtin_ia32_sfence();
    std::memcpy(d, s, n);
#else
    std::memcpy(dst, src, n);
#endif
}

}  // namespace math
}  // namespace sim
}  // namespace pto
