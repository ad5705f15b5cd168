// The kernel example of docs/tile-interface.md, compiled as a kernel is (SIMPLER_DEFINE_KERNEL_ABI,
// C-linkage entry taking int64 args) and called the way the simulated chip calls it: tensors as
// ChipTensor addresses, a float scalar as raw bits, the error taken after the entry returns.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "tile_test_util.hpp"

using namespace simpler::tile;

SIMPLER_DEFINE_KERNEL_ABI();

// z[i, :] = softmax-ish(x + y) for a [64, 64] float tensor, 16 rows per tile (the doc example).
extern "C" void tile_doc_kernel(std::int64_t* args) {
    const simpler::ChipTensor& x = tensor_arg(args[0]);
    const simpler::ChipTensor& y = tensor_arg(args[1]);
    const simpler::ChipTensor& z = tensor_arg(args[2]);
    const float scale = scalar_arg<float>(args[3]);
    VecTile<float, 16, 64> a, b;
    VecTile<float, 16, 1> s;
    for (int i = 0; i < 4; ++i) {
        load(a, x, {i * 16, 0});
        load(b, y, {i * 16, 0});
        add(a, a, b);
        muls(a, a, scale);
        exp(a, a);
        row_sum(s, a);
        row_expand_div(a, a, s);
        store(z, a, {i * 16, 0});
    }
}

namespace {

std::int64_t ptr_arg(const void* p) { return static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p)); }

std::int64_t float_arg(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<std::int64_t>(u);
}

}  // namespace

TEST_CASE("the documented kernel runs through the kernel ABI and matches a reference") {
    static float x[64 * 64], y[64 * 64], z[64 * 64];
    for (int i = 0; i < 64 * 64; ++i) {
        x[i] = std::sin(0.01f * static_cast<float>(i));
        y[i] = std::cos(0.02f * static_cast<float>(i));
        z[i] = -1.0f;
    }
    const simpler::ChipTensor tx = tiletest::compact(x, sizeof x, {64, 64});
    const simpler::ChipTensor ty = tiletest::compact(y, sizeof y, {64, 64});
    const simpler::ChipTensor tz = tiletest::compact(z, sizeof z, {64, 64});
    std::int64_t args[4] = {ptr_arg(&tx), ptr_arg(&ty), ptr_arg(&tz), float_arg(0.5f)};
    tile_doc_kernel(args);
    CHECK(simpler_kernel_take_error() == nullptr);
    for (int r = 0; r < 64; ++r) {
        double sum = 0;
        for (int c = 0; c < 64; ++c) sum += std::exp(0.5 * (x[r * 64 + c] + y[r * 64 + c]));
        for (int c = 0; c < 64; ++c) {
            const double want = std::exp(0.5 * (x[r * 64 + c] + y[r * 64 + c])) / sum;
            REQUIRE(z[r * 64 + c] == doctest::Approx(want).epsilon(1e-5));
        }
    }
}

TEST_CASE("an out-of-bounds tensor reaches the runtime as the kernel's error, and nothing is written") {
    static float x[64 * 64], y[64 * 64], z[48 * 64];
    for (float& v : z) v = 7.0f;
    const simpler::ChipTensor tx = tiletest::compact(x, sizeof x, {64, 64});
    const simpler::ChipTensor ty = tiletest::compact(y, sizeof y, {64, 64});
    // z claims 64 rows but only 48 are backed: the fourth store must be refused.
    const simpler::ChipTensor tz = tiletest::compact(z, sizeof z, {64, 64});
    std::int64_t args[4] = {ptr_arg(&tx), ptr_arg(&ty), ptr_arg(&tz), float_arg(1.0f)};
    for (float& v : x) v = 0.0f;
    for (float& v : y) v = 0.0f;
    tile_doc_kernel(args);
    const char* err = simpler_kernel_take_error();
    REQUIRE(err != nullptr);
    CHECK(std::string(err).find("store") != std::string::npos);
    CHECK(std::string(err).find("backing") != std::string::npos);
    CHECK(simpler_kernel_take_error() == nullptr);  // taken once
    for (float v : z) CHECK(v == doctest::Approx(1.0 / 64));  // rows 0..47 written, nothing past
}
