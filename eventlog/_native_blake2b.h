/* BLAKE2b (RFC 7693), unkeyed, for the id index's 16-byte keys in eventlog/_native.c.
 *
 * Python's _blake2 gives the same digests, but a hashlib object per id costs about 0.4 us
 * of interpreter work, a tenth of a group-commit append. Ids are short (26 characters for
 * minted ones, at most 256), so one or three compressions per key; no streaming state. */
#ifndef EVOLOG_NATIVE_BLAKE2B_H
#define EVOLOG_NATIVE_BLAKE2B_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static const uint64_t B2_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
    0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
    0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static const uint8_t B2_SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

static inline uint64_t b2_rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

/* A little-endian u64 (BLAKE2b's words; the id index's keys and seqs use it too). */
static inline uint64_t load_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

#define B2_G(a, b, c, d, x, y)                                                             \
    do {                                                                                   \
        v[a] += v[b] + (x);                                                                \
        v[d] = b2_rotr(v[d] ^ v[a], 32);                                                   \
        v[c] += v[d];                                                                      \
        v[b] = b2_rotr(v[b] ^ v[c], 24);                                                   \
        v[a] += v[b] + (y);                                                                \
        v[d] = b2_rotr(v[d] ^ v[a], 16);                                                   \
        v[c] += v[d];                                                                      \
        v[b] = b2_rotr(v[b] ^ v[c], 63);                                                   \
    } while (0)

/* One round with literal indices: unrolled, every sigma lookup folds to a constant and v
 * and m stay in registers (a loop over rounds was twice as slow). */
#define B2_ROUND(r)                                                                        \
    do {                                                                                   \
        B2_G(0, 4, 8, 12, m[B2_SIGMA[r][0]], m[B2_SIGMA[r][1]]);                          \
        B2_G(1, 5, 9, 13, m[B2_SIGMA[r][2]], m[B2_SIGMA[r][3]]);                          \
        B2_G(2, 6, 10, 14, m[B2_SIGMA[r][4]], m[B2_SIGMA[r][5]]);                         \
        B2_G(3, 7, 11, 15, m[B2_SIGMA[r][6]], m[B2_SIGMA[r][7]]);                         \
        B2_G(0, 5, 10, 15, m[B2_SIGMA[r][8]], m[B2_SIGMA[r][9]]);                         \
        B2_G(1, 6, 11, 12, m[B2_SIGMA[r][10]], m[B2_SIGMA[r][11]]);                       \
        B2_G(2, 7, 8, 13, m[B2_SIGMA[r][12]], m[B2_SIGMA[r][13]]);                        \
        B2_G(3, 4, 9, 14, m[B2_SIGMA[r][14]], m[B2_SIGMA[r][15]]);                        \
    } while (0)

/* Compress one 128-byte block into h; ``t`` counts the bytes hashed so far. */
static void b2_compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
    uint64_t v[16], m[16];
    for (int i = 0; i < 16; i++) m[i] = load_le64(block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = B2_IV[i];
    }
    v[12] ^= t; /* the counter's high word stays 0: keys hash far less than 2^64 bytes */
    if (last) v[14] = ~v[14];
    B2_ROUND(0); B2_ROUND(1); B2_ROUND(2); B2_ROUND(3); B2_ROUND(4); B2_ROUND(5);
    B2_ROUND(6); B2_ROUND(7); B2_ROUND(8); B2_ROUND(9); B2_ROUND(10); B2_ROUND(11);
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* out = BLAKE2b-128 of data[0:n], as blake2b(data, digest_size=16).digest(). */
static void blake2b_16(const uint8_t *data, size_t n, uint8_t out[16]) {
    uint64_t h[8];
    uint8_t block[128];
    memcpy(h, B2_IV, sizeof h);
    h[0] ^= 0x01010000ULL ^ 16; /* fanout 1, depth 1, no key, 16-byte digest */
    size_t done = 0;
    while (n - done > 128) { /* every block but the last (which may be full) */
        b2_compress(h, data + done, done + 128, 0);
        done += 128;
    }
    memset(block, 0, sizeof block);
    memcpy(block, data + done, n - done);
    b2_compress(h, block, n, 1);
    for (int i = 0; i < 16; i++) out[i] = (uint8_t)(h[i / 8] >> (8 * (i % 8)));
}

#endif
