/* isa.h - the one list of instruction sets (kernel tables) the library
 * knows, from the scalar oracle to the widest vectors. Everything that
 * names the instruction sets expands this list: the kernel-table
 * declarations (kernels.h), the name lookup and the "auto" order
 * (dispatch.c), ap_compiled_isas / ap_build_info (api.c), the C tests and
 * the fuzz harness; Python gets it through ap_compiled_isas.
 *
 *   AP_ISAS(X)               X(name) for each instruction set, in order;
 *                            "auto" picks the last one this CPU supports
 *   AP_ISA_BUILT_<name>(...) its arguments when <name>'s kernels are
 *                            compiled into this build, else nothing (the
 *                            library's sources only: set by CMakeLists.txt
 *                            through AP_HAVE_*_KERNELS)
 *
 * A new instruction set: one X(name) here, its AP_ISA_BUILT_ line, its
 * kernels in csrc/kernels/<name>.c and its CPU test in dispatch.c.
 */
#ifndef AP_ISA_H
#define AP_ISA_H

#define AP_ISAS(X) X(scalar) X(avx2) X(avx512) X(neon)

#define AP_ISA_BUILT_scalar(...) __VA_ARGS__
#if defined(AP_HAVE_X86_KERNELS)
#define AP_ISA_BUILT_avx2(...) __VA_ARGS__
#define AP_ISA_BUILT_avx512(...) __VA_ARGS__
#else
#define AP_ISA_BUILT_avx2(...)
#define AP_ISA_BUILT_avx512(...)
#endif
#if defined(AP_HAVE_NEON_KERNELS)
#define AP_ISA_BUILT_neon(...) __VA_ARGS__
#else
#define AP_ISA_BUILT_neon(...)
#endif

#endif /* AP_ISA_H */
