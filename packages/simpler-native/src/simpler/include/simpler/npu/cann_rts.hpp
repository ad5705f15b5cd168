// CANN runtime entry points that the ACL headers shipped in the torch_npu wheel do not declare.
// The one place these declarations live: simpler-native's NPU backend (src/core/npu/) and the
// `cann` variant of tools/cann-probe both include it from simpler's installed headers. Nothing
// else in simpler includes it, and including it defines nothing (declarations only).
//
// Written from the public CANN runtime API reference (the `rts` kernel-loading interface of
// CANN 8.x: rtsBinaryLoadFromFile, rtsFuncGetByName, rtsLaunchCpuKernel and their argument
// structs). These declarations are ours; on a machine with the CANN toolkit, its own
// `runtime/rts/rts_kernel.h` is the authority, and the layout checks below must agree with it.
// UNVERIFIED on hardware: compiled in CI (`nox -s npu-compile`), never linked against
// libruntime.so or run here (the NPU backend's link check leaves exactly these symbols open).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

using rtError_t = std::int32_t;
using rtStream_t = void*;
using rtBinHandle = void*;
using rtFuncHandle = void*;

inline constexpr rtError_t RT_ERROR_NONE = 0;

// Host input info of an AICPU launch (unused by the probe: it passes no host-memory inputs).
struct rtHostInputInfo_t {
    std::uint32_t addrOffset;
    std::uint32_t dataOffset;
};

// The argument buffer of an AICPU launch. `args` is host memory that the runtime copies to the
// device at launch, which is the copy-on-enqueue contract the probe relies on.
struct rtAicpuArgsEx_t {
    void* args;
    rtHostInputInfo_t* hostInputInfoPtr;
    rtHostInputInfo_t* kernelOffsetInfoPtr;
    std::uint32_t argsSize;
    std::uint16_t hostInputInfoNum;
    std::uint16_t kernelOffsetInfoNum;
    std::uint32_t soNameAddrOffset;
    std::uint32_t kernelNameAddrOffset;
    bool isNoNeedH2DCopy;  // false: the runtime copies `args` to the device
    std::uint16_t timeout;
    std::uint8_t reserved;
};

struct rtCpuKernelArgs_t {
    rtAicpuArgsEx_t baseArgs;
    std::size_t cpuParamHeadOffset;
    std::uint32_t rsv[4];
};

enum rtLaunchKernelAttrId : std::int32_t { RT_LAUNCH_KERNEL_ATTR_TIMEOUT_PLACEHOLDER = 0 };

union rtLaunchKernelAttrVal_t {
    std::uint32_t rsv[4];
};

struct rtLaunchKernelAttr_t {
    rtLaunchKernelAttrId id;
    rtLaunchKernelAttrVal_t value;
};

// The runtime requires non-null attribute storage even with numAttrs == 0.
struct rtKernelLaunchCfg_t {
    rtLaunchKernelAttr_t* attrs;
    std::size_t numAttrs;
};

enum rtLoadBinaryOption : std::int32_t { RT_LOAD_BINARY_OPT_CPU_KERNEL_MODE = 3 };

union rtLoadBinaryOptionValue_t {
    std::int32_t cpuKernelMode;  // 1: load the AICPU shared object named by the JSON descriptor
    std::uint32_t rsv[4];
};

struct rtLoadBinaryOption_t {
    rtLoadBinaryOption optionId;
    rtLoadBinaryOptionValue_t value;
};

struct rtLoadBinaryConfig_t {
    rtLoadBinaryOption_t* options;
    std::size_t numOpt;
};

rtError_t rtsBinaryLoadFromFile(const char* binPath, const rtLoadBinaryConfig_t* optionalCfg, rtBinHandle* handle);
rtError_t rtsBinaryUnload(rtBinHandle binHandle);
rtError_t rtsFuncGetByName(rtBinHandle binHandle, const char* kernelName, rtFuncHandle* funcHandle);
rtError_t rtsLaunchCpuKernel(rtFuncHandle funcHandle, std::uint32_t numBlocks, rtStream_t stm,
                             const rtKernelLaunchCfg_t* cfg, rtCpuKernelArgs_t* argsInfo);

}  // extern "C"

// The documented layout on LP64 (x86-64 and aarch64 hosts): a mismatch here is an ABI break.
static_assert(sizeof(void*) == 8, "the CANN host runtime is LP64");
static_assert(offsetof(rtAicpuArgsEx_t, argsSize) == 24);
static_assert(offsetof(rtAicpuArgsEx_t, hostInputInfoNum) == 28);
static_assert(offsetof(rtAicpuArgsEx_t, soNameAddrOffset) == 32);
static_assert(offsetof(rtAicpuArgsEx_t, kernelNameAddrOffset) == 36);
static_assert(offsetof(rtAicpuArgsEx_t, isNoNeedH2DCopy) == 40);
static_assert(offsetof(rtAicpuArgsEx_t, timeout) == 42);
static_assert(offsetof(rtAicpuArgsEx_t, reserved) == 44);
static_assert(sizeof(rtAicpuArgsEx_t) == 48);
static_assert(offsetof(rtCpuKernelArgs_t, cpuParamHeadOffset) == 48);
static_assert(sizeof(rtCpuKernelArgs_t) == 72);
static_assert(sizeof(rtLaunchKernelAttr_t) == 20);
static_assert(sizeof(rtKernelLaunchCfg_t) == 16);
static_assert(sizeof(rtLoadBinaryOption_t) == 20);
