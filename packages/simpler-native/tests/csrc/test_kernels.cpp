// Hand-written kernels for the Worker tests (one binary, several entries).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "simpler/kernel_abi.hpp"
#include "simpler/wire/chip_tensor.hpp"

SIMPLER_DEFINE_KERNEL_ABI();

using simpler::ChipTensor;

namespace {

const ChipTensor& T(std::int64_t* args, int i) { return *reinterpret_cast<const ChipTensor*>(args[i]); }

template <class E>
E* base(const ChipTensor& t) { return reinterpret_cast<E*>(t.buffer.addr) + t.start_offset; }

float f32(std::int64_t bits) {
    std::uint32_t b = static_cast<std::uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

void spin_us(int us) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
    while (std::chrono::steady_clock::now() < end) {
    }
}

}  // namespace

#define KERNEL(name) extern "C" __attribute__((visibility("default"))) void name(std::int64_t* args)

// c = a + b (1-D float32 views).
KERNEL(vadd) {
    const ChipTensor &a = T(args, 0), &b = T(args, 1), &c = T(args, 2);
    const float* pa = base<float>(a);
    const float* pb = base<float>(b);
    float* pc = base<float>(c);
    for (std::uint32_t i = 0; i < c.shapes[0]; ++i)
        pc[i * c.strides[0]] = pa[i * a.strides[0]] + pb[i * b.strides[0]];
}

// y = x * s (1-D float32, scalar f32).
KERNEL(scale) {
    const ChipTensor &x = T(args, 0), &y = T(args, 1);
    const float s = f32(args[2]);
    for (std::uint32_t i = 0; i < y.shapes[0]; ++i) base<float>(y)[i * y.strides[0]] = base<float>(x)[i * x.strides[0]] * s;
}

// x = x * m + k (1-D int64 InOut, scalars i64): order of applications changes the result.
KERNEL(muladd) {
    const ChipTensor& x = T(args, 0);
    const std::int64_t m = args[1], k = args[2];
    spin_us(50);
    for (std::uint32_t i = 0; i < x.shapes[0]; ++i) {
        std::int64_t* p = base<std::int64_t>(x) + i * x.strides[0];
        *p = *p * m + k;
    }
}

// b = a (1-D int64).
KERNEL(copy_i64) {
    const ChipTensor &a = T(args, 0), &b = T(args, 1);
    spin_us(50);
    for (std::uint32_t i = 0; i < b.shapes[0]; ++i) base<std::int64_t>(b)[i * b.strides[0]] = base<std::int64_t>(a)[i * a.strides[0]];
}

// C = A @ B (2-D float32 views, plain loops).
KERNEL(matmul) {
    const ChipTensor &A = T(args, 0), &B = T(args, 1), &C = T(args, 2);
    const std::uint32_t M = C.shapes[0], N = C.shapes[1], K = A.shapes[1];
    const float* pa = base<float>(A);
    const float* pb = base<float>(B);
    float* pc = base<float>(C);
    for (std::uint32_t i = 0; i < M; ++i)
        for (std::uint32_t j = 0; j < N; ++j) {
            float acc = 0.f;
            for (std::uint32_t k = 0; k < K; ++k) acc += pa[i * A.strides[0] + k * A.strides[1]] * pb[k * B.strides[0] + j * B.strides[1]];
            pc[i * C.strides[0] + j * C.strides[1]] = acc;
        }
}

// x += 1 on every element (1-D int64 InOut).
KERNEL(inc) {
    const ChipTensor& x = T(args, 0);
    for (std::uint32_t i = 0; i < x.shapes[0]; ++i) base<std::int64_t>(x)[i * x.strides[0]] += 1;
}

// Does nothing with its In tensor (runtime overhead).
KERNEL(empty) { (void)args; }

// slot[0] = (*counter)++ where counter is a raw address passed as a scalar (no tensor deps).
KERNEL(stamp) {
    const ChipTensor& slot = T(args, 0);
    auto* counter = reinterpret_cast<std::atomic<std::int64_t>*>(args[1]);
    const std::int64_t delay = args[2];
    spin_us(static_cast<int>(delay));
    base<std::int64_t>(slot)[0] = counter->fetch_add(1);
}

// Reports an error through the kernel error channel.
KERNEL(fails) {
    const ChipTensor& x = T(args, 0);
    simpler::report_kernel_error("tile access out of bounds at row %u", x.shapes[0]);
}

// Throws a C++ exception.
KERNEL(throws) {
    (void)args;
    throw std::runtime_error("kernel exploded");
}
