/* dispatch.c - chooses the kernel table and nothing more: CPU detection,
 * the name lookup over the list of instruction sets (isa.h), the "auto"
 * order, AVGPOOL_ISA (read once) and ap_set_isa. The entry points that run
 * kernels are in api.c. */
#define _DEFAULT_SOURCE /* mincore: glibc declares it for the default or GNU sources only */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__) || defined(__APPLE__)
#include <sys/mman.h>
#endif

#include "kernels/kernels.h"

static const ap_kernel_table *ap_table = NULL;
static ap_status ap_table_status = AP_OK;

#if defined(AP_HAVE_X86_KERNELS)
#include <cpuid.h>

/* x86 features from CPUID, and from XGETBV whether the OS saves the ymm
 * (XCR0 bits 1-2) and zmm / opmask (bits 5-7) registers on context switch. */
static int ap_x86_has(int want_avx512) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !fma || !f16c) return 0;
    unsigned xlo, xhi;
    __asm__("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 0x6) != 0x6) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if (!((b >> 5) & 1)) return 0; /* AVX2 */
    if (!want_avx512) return 1;
    const unsigned f = 1u << 16, dq = 1u << 17, bw = 1u << 30, vl = 1u << 31;
    return (b & (f | dq | bw | vl)) == (f | dq | bw | vl) && (xlo & 0xe0) == 0xe0;
}
#endif

/* Whether this CPU runs each compiled instruction set (isa.h). */
static int ap_cpu_has_scalar(void) { return 1; }
#if defined(AP_HAVE_X86_KERNELS)
static int ap_cpu_has_avx2(void) { return ap_x86_has(0); }
static int ap_cpu_has_avx512(void) { return ap_x86_has(1); }
#endif
#if defined(AP_HAVE_NEON_KERNELS)
/* Advanced SIMD is mandatory on aarch64. */
static int ap_cpu_has_neon(void) { return 1; }
#endif

/* The kernel table for an ISA name, or NULL if unknown or unsupported here. */
static const ap_kernel_table *ap_table_for(const char *name) {
#define AP_LOOKUP(isa)                                                                     \
    AP_ISA_BUILT_##isa(if (strcmp(name, #isa) == 0) return ap_cpu_has_##isa() ? &ap_kernels_##isa : NULL;)
    AP_ISAS(AP_LOOKUP)
#undef AP_LOOKUP
    return NULL;
}

/* The best table this CPU supports: the last of the list (isa.h) it runs. */
static const ap_kernel_table *ap_best_table(void) {
    const ap_kernel_table *best = &ap_kernels_scalar;
#define AP_BETTER(isa) AP_ISA_BUILT_##isa(if (ap_cpu_has_##isa()) best = &ap_kernels_##isa;)
    AP_ISAS(AP_BETTER)
#undef AP_BETTER
    return best;
}

ap_status ap_set_isa(const char *name) {
    const ap_kernel_table *t =
        (!name || !*name || strcmp(name, "auto") == 0) ? ap_best_table() : ap_table_for(name);
    if (!t) return AP_ERR_ISA;
    ap_table = t;
    ap_table_status = AP_OK;
    return AP_OK;
}

/* First use: AVGPOOL_ISA=scalar|avx2|avx512|neon forces a path, unset or
 * "auto" picks the best; an unknown or unsupported name is an error on every
 * call (AP_ERR_ISA) rather than a silent fallback. */
static void ap_select_table(void) {
    if (ap_set_isa(getenv("AVGPOOL_ISA")) != AP_OK) ap_table_status = AP_ERR_ISA;
}

const ap_kernel_table *ap_kernels(ap_status *status) {
    /* Racing first calls compute the same answer; the pointer store is the
     * only shared write. */
    if (!ap_table && ap_table_status == AP_OK) ap_select_table();
    if (!ap_table && status) *status = ap_table_status;
    return ap_table;
}

const char *ap_isa(void) {
    const ap_kernel_table *t = ap_kernels(NULL);
    return t ? t->isa : "unavailable";
}

/* The size in bytes of the level-3 cache that CPU 0 shares with its neighbours, as
 * Linux describes it (/sys/devices/system/cpu/cpu0/cache/index<i>/, "32768K"); 0
 * where it does not. glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) can report far more
 * than one core can use: 384 MiB on a 2-core Zen 5 VM whose cache is 32 MiB. */
static int64_t ap_sysfs_l3_bytes(void) {
#if defined(__linux__)
    for (int i = 0; i < 8; ++i) {
        char path[64], text[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) return 0;
        const int level = fgets(text, sizeof text, f) ? atoi(text) : 0;
        fclose(f);
        if (level != 3) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!(f = fopen(path, "r"))) return 0;
        int64_t bytes = 0;
        if (fgets(text, sizeof text, f)) {
            char *end;
            const long long v = strtoll(text, &end, 10);
            const int64_t unit = *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20 : 1;
            if (v > 0 && v < ((int64_t)1 << 40) / unit) bytes = (int64_t)v * unit;
        }
        fclose(f);
        return bytes;
    }
#endif
    return 0;
}

/* Calls that move more bytes than this write their float32 output with
 * streaming stores: AVGPOOL_STREAM_BYTES when set (read on each call, so a
 * process can change it), else the last-level cache's size as Linux's sysfs
 * gives it, else as the C library reports it, else 32 MiB. Past the cache the
 * output goes to memory anyway, and a streaming store skips reading each line
 * before writing it. Zen 5 VM (sysfs 32 MiB, sysconf 384 MiB), 2 x 2 s2 on
 * 16 x 112 x 112 x 64 channels last (64 MB moved), compiled operator, processes
 * alternated: 2334-2507 -> 2138-2250 us at 1 thread, 1738-1806 -> 1478-1614 at 2. */
int64_t ap_stream_bytes(void) {
    const char *e = getenv("AVGPOOL_STREAM_BYTES");
    if (e && *e) {
        char *end;
        const long long v = strtoll(e, &end, 10);
        if (*end == '\0' && v >= 0) return (int64_t)v;
    }
    static int64_t llc = 0;
    int64_t c = __atomic_load_n(&llc, __ATOMIC_RELAXED);
    if (c == 0) {
        c = ap_sysfs_l3_bytes();
#if defined(_SC_LEVEL3_CACHE_SIZE)
        const long l3 = c > 0 ? 0 : sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (l3 > 0) c = l3;
#endif
        if (c <= 0) c = (int64_t)32 << 20;
        __atomic_store_n(&llc, c, __ATOMIC_RELAXED);
    }
    return c;
}

/* Whether the page holding p is in memory (mincore); 1 where that cannot be told. */
static int ap_page_resident(const void *p) {
#if defined(__linux__) || defined(__APPLE__)
    static long page = 0;
    long size = __atomic_load_n(&page, __ATOMIC_RELAXED);
    if (size == 0) {
        size = sysconf(_SC_PAGESIZE);
        if (size <= 0 || (size & (size - 1)) != 0) size = 4096;
        __atomic_store_n(&page, size, __ATOMIC_RELAXED);
    }
#if defined(__APPLE__)
    char v = 0;
#else
    unsigned char v = 0;
#endif
    if (mincore((void *)((uintptr_t)p & ~(uintptr_t)(size - 1)), (size_t)size, &v) != 0) return 1;
    return v & 1;
#else
    (void)p;
    return 1;
#endif
}

/* Judged from the first, middle and last pages. A buffer not written yet (fresh
 * from the allocator) has none in memory: each page faults in on the first store
 * and the kernel zero-fills it through the cache, where a streaming store to it
 * then has to evict the zeros. Backward 2 x 2 s2 into a fresh 64-byte aligned
 * 16x112x112x64 gradient (51 MB), Intel Xeon VM: 16.2 ms streamed against 9.3
 * with plain stores at 1 thread, 8.3 against 4.7 at 2; the same buffer reused,
 * 2.7 against 5.1 and 1.4 against 1.6. */
int ap_pages_resident(const void *p, int64_t bytes) {
    if (bytes <= 0) return 1;
    const char *c = (const char *)p;
    return ap_page_resident(c) && ap_page_resident(c + bytes / 2) &&
           ap_page_resident(c + bytes - 1);
}
