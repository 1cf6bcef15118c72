/* msgpack reading for eventlog/_native.c: headers, skipping a value, ints, UTF-8.
 * Every function checks bounds; none touches a Python object (they run without the GIL). */
#ifndef EVOLOG_NATIVE_MSGPACK_H
#define EVOLOG_NATIVE_MSGPACK_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 512


typedef struct {
    const uint8_t *p, *end;
} Reader;

static inline int need(const Reader *r, Py_ssize_t n) { return r->end - r->p >= n; }

static inline uint64_t be(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* Length of a str header at r->p (advancing past the header), or -1 if not a str. */
static Py_ssize_t str_header(Reader *r) {
    if (!need(r, 1)) return -1;
    uint8_t b = *r->p;
    int w;
    if ((b & 0xe0) == 0xa0) { r->p++; return b & 0x1f; }
    if (b == 0xd9) w = 1; else if (b == 0xda) w = 2; else if (b == 0xdb) w = 4; else return -1;
    if (!need(r, 1 + w)) return -1;
    Py_ssize_t n = (Py_ssize_t)be(r->p + 1, w);
    r->p += 1 + w;
    return n;
}

/* Container length (array or map) at r->p, advancing past the header; -1 if not one. */
static Py_ssize_t container_header(Reader *r, int map) {
    if (!need(r, 1)) return -1;
    uint8_t b = *r->p;
    uint8_t fix = map ? 0x80 : 0x90, b16 = map ? 0xde : 0xdc, b32 = map ? 0xdf : 0xdd;
    if ((b & 0xf0) == fix) { r->p++; return b & 0x0f; }
    int w = b == b16 ? 2 : b == b32 ? 4 : 0;
    if (!w || !need(r, 1 + w)) return -1;
    Py_ssize_t n = (Py_ssize_t)be(r->p + 1, w);
    r->p += 1 + w;
    return n;
}

/* Skip one complete value; -1 if malformed or truncated. */
static int skip(Reader *r, int depth) {
    if (depth > MAX_DEPTH || !need(r, 1)) return -1;
    uint8_t b = *r->p;
    Py_ssize_t n;
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) { r->p++; return 0; }
    if ((b & 0xe0) == 0xa0 || b == 0xd9 || b == 0xda || b == 0xdb) {
        n = str_header(r);
        if (n < 0 || !need(r, n)) return -1;
        r->p += n;
        return 0;
    }
    if ((b & 0xf0) == 0x90 || b == 0xdc || b == 0xdd || (b & 0xf0) == 0x80 || b == 0xde ||
        b == 0xdf) {
        int map = (b & 0xf0) == 0x80 || b == 0xde || b == 0xdf;
        n = container_header(r, map);
        if (n < 0) return -1;
        for (Py_ssize_t i = 0; i < (map ? 2 * n : n); i++)
            if (skip(r, depth + 1) < 0) return -1;
        return 0;
    }
    switch (b) {
    case 0xcc: case 0xd0: n = 2; break;
    case 0xcd: case 0xd1: n = 3; break;
    case 0xca: case 0xce: case 0xd2: n = 5; break;
    case 0xcb: case 0xcf: case 0xd3: n = 9; break;
    case 0xd4: n = 3; break;   /* fixext 1..16: type byte + data */
    case 0xd5: n = 4; break;
    case 0xd6: n = 6; break;
    case 0xd7: n = 10; break;
    case 0xd8: n = 18; break;
    case 0xc4: case 0xc5: case 0xc6: case 0xc7: case 0xc8: case 0xc9: {
        int w = (b == 0xc4 || b == 0xc7) ? 1 : (b == 0xc5 || b == 0xc8) ? 2 : 4;
        int ext = b >= 0xc7;
        if (!need(r, 1 + w)) return -1;
        n = 1 + w + ext + (Py_ssize_t)be(r->p + 1, w);
        break;
    }
    default: return -1;
    }
    if (!need(r, n)) return -1;
    r->p += n;
    return 0;
}

/* UTF-8 as Python's strict decoder accepts it (no surrogates, no overlongs, <= U+10FFFF). */
static int utf8_ok(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) { i += 8; continue; }
        }
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c >= 0xc2 && c <= 0xdf) {
            if (i + 1 >= n || (s[i + 1] & 0xc0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            if (i + 2 >= n || (s[i + 1] & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80) return 0;
            if (c == 0xe0 && s[i + 1] < 0xa0) return 0;  /* overlong */
            if (c == 0xed && s[i + 1] >= 0xa0) return 0; /* surrogate */
            i += 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            if (i + 3 >= n || (s[i + 1] & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80 ||
                (s[i + 3] & 0xc0) != 0x80)
                return 0;
            if (c == 0xf0 && s[i + 1] < 0x90) return 0;  /* overlong */
            if (c == 0xf4 && s[i + 1] >= 0x90) return 0; /* past U+10FFFF */
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* Integer at r->p (a msgpack int of any width), range-checked to int64. */
static int read_int(Reader *r, int64_t *out) {
    if (!need(r, 1)) return -1;
    uint8_t b = *r->p;
    if (b <= 0x7f) { *out = b; r->p++; return 0; }
    if (b >= 0xe0) { *out = (int8_t)b; r->p++; return 0; }
    int w;
    int sign = 0;
    switch (b) {
    case 0xcc: w = 1; break; case 0xcd: w = 2; break; case 0xce: w = 4; break;
    case 0xcf: w = 8; break;
    case 0xd0: w = 1; sign = 1; break; case 0xd1: w = 2; sign = 1; break;
    case 0xd2: w = 4; sign = 1; break; case 0xd3: w = 8; sign = 1; break;
    default: return -1;
    }
    if (!need(r, 1 + w)) return -1;
    uint64_t v = be(r->p + 1, w);
    r->p += 1 + w;
    if (sign) {
        if (w < 8 && (v >> (8 * w - 1)) & 1) v |= ~0ull << (8 * w); /* sign-extend */
        *out = (int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)v;
    }
    return 0;
}

#endif
