// The first header a generated PTO-ISA kernel includes: the address-space and entry macros its
// source is written with (`__gm__` for global-memory pointers, `__aicore__` for AICore
// functions). A device compile (CANN's compiler, no __CPU_SIM) gets `__aicore__` as the
// `[aicore]` attribute and provides `__gm__` itself; the CPU backends (simpler's and the
// official headers' `__CPU_SIM` build) see both as empty. Being a header rather than lines in
// the kernel source, it keeps the kernel's leading lines plain includes, so the toolchain can
// precompile all of them (simpler.toolchain: the precompiled prelude).
#pragma once

#ifndef __gm__
#define __gm__
#endif
#ifndef __aicore__
#if defined(__CPU_SIM)
#define __aicore__
#else
#define __aicore__ [aicore]
#endif
#endif
