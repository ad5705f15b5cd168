// The byte copies of TLOAD and TSTORE (pto/sim/math/copy.hpp): copy_forward and copy_stream copy
// exactly n bytes for every length and alignment of source and destination, and touch nothing
// around them. Built at -O2 and at -march=native (meson.build): the vector width of the loops
// depends on the target.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pto/sim/math/copy.hpp"

using namespace pto::sim::math;

namespace {

constexpr std::size_t kPad = 128;  // bytes around the destination that must stay untouched

// Copies n bytes from src + so to dst + kPad + dof with `copy` and checks every byte of the buffer.
template <class Copy>
void check_copy(Copy copy, std::size_t n, std::size_t so, std::size_t dof) {
    std::vector<unsigned char> src(n + so + 64), dst(n + dof + 2 * kPad + 64, 0xA5);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131u + 7u);
    copy(dst.data() + kPad + dof, src.data() + so, n);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= kPad + dof && i < kPad + dof + n;
        const unsigned char want = inside ? src[so + (i - kPad - dof)] : 0xA5;
        if (dst[i] != want) ++bad;
    }
    CAPTURE(n);
    CAPTURE(so);
    CAPTURE(dof);
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("copy_forward copies every length and alignment exactly") {
    for (std::size_t n = 0; n <= 1100; n += (n < 600 ? 1 : 37))
        for (std::size_t so : {0u, 1u, 4u, 36u})
            for (std::size_t dof : {0u, 3u, 32u}) check_copy(copy_forward, n, so, dof);
    check_copy(copy_forward, 40000, 4, 0);
}

TEST_CASE("copy_stream copies every length and alignment exactly") {
    for (std::size_t n = 0; n <= 700; n += (n < 300 ? 1 : 29))
        for (std::size_t so : {0u, 4u})
            for (std::size_t dof : {0u, 5u, 32u, 60u}) check_copy(copy_stream, n, so, dof);
    for (std::size_t n : {std::size_t{32} << 10, (std::size_t{32} << 10) + 12, std::size_t{70000}})
        check_copy(copy_stream, n, 4, 20);
}
