/* output_cache.h - the blocks behind avgpool._core's large output arrays, kept for reuse.
 *
 * A new array of many megabytes gets fresh pages from the OS (glibc maps every allocation
 * past 32 MiB afresh and unmaps it when freed), so a call that allocates its output, as
 * every call through autograd does, also pays a page fault and a zeroed page for each page
 * of it: 3.5-7 ms on a 51 MiB gradient whose kernel takes 1.5. Outputs of at least
 * AP_OUTPUT_CACHE_MIN_BYTES take a block from here instead, 64-byte aligned (the kernels'
 * streaming stores need it), and their array gives it back when it dies; freed blocks are
 * kept up to AVGPOOL_OUTPUT_CACHE_BYTES in all (read at each release), newest kept first.
 *
 * The GIL guards the list: every function runs with it held and calls no Python API, so a
 * release that a garbage collection runs in the middle of an allocation (after a take)
 * never sees it half updated. */
#ifndef AVGPOOL_OUTPUT_CACHE_H
#define AVGPOOL_OUTPUT_CACHE_H

#include <stdint.h>
#include <stdlib.h>
#if defined(_WIN32)
#include <malloc.h>
#elif defined(__linux__)
#include <sys/mman.h>
#endif

#define AP_OUTPUT_CACHE_MIN_BYTES ((size_t)4 << 20)
#define AP_OUTPUT_CACHE_DEFAULT_BYTES ((size_t)256 << 20)
#define AP_OUTPUT_CACHE_MAX_BLOCKS 16

static void *ap_cache_block[AP_OUTPUT_CACHE_MAX_BLOCKS];
static size_t ap_cache_size[AP_OUTPUT_CACHE_MAX_BLOCKS];
static int ap_cache_count = 0;     /* blocks kept, oldest first */
static size_t ap_cache_total = 0;  /* their bytes */

/* AVGPOOL_OUTPUT_CACHE_BYTES (a count of bytes; 0 keeps nothing), else the default. */
static size_t ap_output_cache_limit(void) {
    const char *e = getenv("AVGPOOL_OUTPUT_CACHE_BYTES");
    if (e && *e) {
        char *end;
        const unsigned long long v = strtoull(e, &end, 10);
        if (*end == '\0' && e[0] != '-') return (size_t)v;
    }
    return AP_OUTPUT_CACHE_DEFAULT_BYTES;
}

static void ap_block_free(void *p) {
#if defined(_WIN32)
    _aligned_free(p);
#else
    free(p);
#endif
}

static void *ap_block_alloc(size_t n) {
    void *p = NULL;
#if defined(_WIN32)
    p = _aligned_malloc(n, 64);
#else
    if (posix_memalign(&p, 64, n) != 0) return NULL;
#endif
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* as numpy does for its arrays of 4 MiB and more: transparent huge pages where the
     * system gives them on request, fewer TLB misses for the kernels */
    const uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
    if (a < (uintptr_t)p + n) (void)madvise((void *)a, (uintptr_t)p + n - a, MADV_HUGEPAGE);
#endif
    return p;
}

/* Kept block i out of the list (the later ones move up); returns it. */
static void *ap_output_cache_remove(int i) {
    void *p = ap_cache_block[i];
    ap_cache_total -= ap_cache_size[i];
    for (int j = i + 1; j < ap_cache_count; ++j) {
        ap_cache_block[j - 1] = ap_cache_block[j];
        ap_cache_size[j - 1] = ap_cache_size[j];
    }
    --ap_cache_count;
    return p;
}

static void ap_output_cache_drop_oldest(void) { ap_block_free(ap_output_cache_remove(0)); }

/* A block of at least n bytes (n > 0): a kept one of n to n + n/8 bytes, the smallest, or
 * a new one of n; its size in *size. NULL when out of memory. */
static void *ap_output_cache_take(size_t n, size_t *size) {
    int best = -1;
    for (int i = 0; i < ap_cache_count; ++i)
        if (ap_cache_size[i] >= n && ap_cache_size[i] - n <= n / 8 &&
            (best < 0 || ap_cache_size[i] < ap_cache_size[best]))
            best = i;
    if (best < 0) {
        *size = n;
        return ap_block_alloc(n);
    }
    *size = ap_cache_size[best];
    return ap_output_cache_remove(best);
}

/* Block p of `size` bytes is free again: kept when it fits under the limit after dropping
 * the oldest kept blocks, else freed. */
static void ap_output_cache_give(void *p, size_t size) {
    const size_t limit = ap_output_cache_limit();
    while (ap_cache_count > 0 &&
           (ap_cache_count == AP_OUTPUT_CACHE_MAX_BLOCKS || ap_cache_total > limit ||
            (size <= limit && ap_cache_total + size > limit)))
        ap_output_cache_drop_oldest();
    if (size > limit) {
        ap_block_free(p);
        return;
    }
    ap_cache_block[ap_cache_count] = p;
    ap_cache_size[ap_cache_count] = size;
    ++ap_cache_count;
    ap_cache_total += size;
}

static void ap_output_cache_clear(void) {
    while (ap_cache_count > 0) ap_output_cache_drop_oldest();
}

static size_t ap_output_cache_bytes(void) { return ap_cache_total; }
static int ap_output_cache_blocks(void) { return ap_cache_count; }

#endif
