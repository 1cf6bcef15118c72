/* Vector kernels for a cold `evolog route` that does not import numpy (projections/graph/_lean.py).
 *
 * A cold route embeds one task with a static model (the mean of a few float16 rows of the
 * token matrix) and ranks every stored node vector by its dot product with it. Importing
 * numpy and usearch for that costs far more than the arithmetic, so these three loops read the
 * memory-mapped files through the buffer protocol instead:
 *
 *   topk(matrix_f16, dim, query_f32, k)  -> [(row, score)], best first, ties to the lower row
 *   dots(matrix_f32, dim, query_f32)     -> [score per row]
 *   mean_rows(table_f16, dim, ids)       -> bytes: float32 mean of the rows, then L2-normalised
 *
 * and two for `evolog graph`, which prints the checkpoint's stored views (170 MB at 1e5 nodes):
 *
 *   check_views(data, offsets_i64, crcs_u32, live_u8|None) -> the first row failing its CRC-32, or -1
 *   write_views(fd, data, offsets_i64, live_u8|None, sep)   -> the rows' views joined by sep, written
 *                                                               with writev straight from the mapping
 *
 * mean_rows repeats numpy's arithmetic exactly (projections/graph/_wordllama.py pools with
 * numpy): rows are summed in order in float32 and divided by their count; the norm is numpy's
 * pairwise sum of the squares (the same blocking), so the vectors are bit-identical.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define HAVE_X86_DISPATCH 1
#else
#define HAVE_X86_DISPATCH 0
#endif

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* -- dot products of a query with float16 rows ------------------------------------------ */
static float dot_f16_scalar(const uint16_t *row, const float *q, Py_ssize_t dim) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    Py_ssize_t i = 0;
    for (; i + 8 <= dim; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += half_to_float(row[i + j]) * q[i + j];
    for (; i < dim; i++) acc[0] += half_to_float(row[i]) * q[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

#if HAVE_X86_DISPATCH
__attribute__((target("avx2,fma,f16c"))) static float dot_f16_avx2(const uint16_t *row,
                                                                    const float *q,
                                                                    Py_ssize_t dim) {
    __m256 acc = _mm256_setzero_ps();
    Py_ssize_t i = 0;
    for (; i + 8 <= dim; i += 8) {
        __m256 r = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + i)));
        acc = _mm256_fmadd_ps(r, _mm256_loadu_ps(q + i), acc);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    /* The same lane order as the scalar loop; FMA rounds once, so scores may differ from
     * it in the last bit: one process always uses one of the two. */
    float tail = 0;
    for (; i < dim; i++) tail += half_to_float(row[i]) * q[i];
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])) + tail;
}
#endif

typedef float (*dot_f16_fn)(const uint16_t *, const float *, Py_ssize_t);

static dot_f16_fn pick_dot_f16(void) {
#if HAVE_X86_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c"))
        return dot_f16_avx2;
#endif
    return dot_f16_scalar;
}

static dot_f16_fn dot_f16;

/* -- buffers ------------------------------------------------------------------------------ */
static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t item, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len % item) {
        PyErr_Format(PyExc_ValueError, "%s: expected a multiple of %zd bytes; got %zd", what,
                     item, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Rows and a query of `dim` values: checks the shapes, returns the row count or -1. */
static Py_ssize_t check_rows(Py_buffer *m, Py_buffer *q, Py_ssize_t dim, Py_ssize_t item) {
    if (dim < 1) {
        PyErr_Format(PyExc_ValueError, "dim: expected a positive integer; got %zd", dim);
        return -1;
    }
    if (q->len != dim * 4) {
        PyErr_Format(PyExc_ValueError, "query: expected %zd float32 values; got %zd bytes", dim,
                     q->len);
        return -1;
    }
    if (m->len % (dim * item)) {
        PyErr_Format(PyExc_ValueError, "matrix: expected rows of %zd bytes; got %zd bytes",
                     dim * item, m->len);
        return -1;
    }
    return m->len / (dim * item);
}

/* -- topk ---------------------------------------------------------------------------------- */
typedef struct {
    float score;
    Py_ssize_t row;
} hit;

/* `a` ranks below `b`: a lower score, or an equal score on a later row. */
static int worse(const hit *a, const hit *b) {
    return a->score < b->score || (a->score == b->score && a->row > b->row);
}

static void sift_down(hit *heap, Py_ssize_t n, Py_ssize_t i) {
    for (;;) {
        Py_ssize_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && worse(&heap[l], &heap[w])) w = l;
        if (r < n && worse(&heap[r], &heap[w])) w = r;
        if (w == i) return;
        hit t = heap[i];
        heap[i] = heap[w];
        heap[w] = t;
        i = w;
    }
}

static void sift_up(hit *heap, Py_ssize_t i) {
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (!worse(&heap[i], &heap[p])) return;
        hit t = heap[i];
        heap[i] = heap[p];
        heap[p] = t;
        i = p;
    }
}

static int by_rank(const void *a, const void *b) {
    const hit *x = a, *y = b;
    if (worse(x, y)) return 1;
    if (worse(y, x)) return -1;
    return 0;
}

static PyObject *topk(PyObject *self, PyObject *args) {
    PyObject *mobj, *qobj;
    Py_ssize_t dim, k;
    if (!PyArg_ParseTuple(args, "OnOn:topk", &mobj, &dim, &qobj, &k)) return NULL;
    if (k < 1) {
        PyErr_Format(PyExc_ValueError, "k: expected a positive integer; got %zd", k);
        return NULL;
    }
    Py_buffer m, q;
    if (get_buffer(mobj, &m, 2, "matrix") < 0) return NULL;
    if (get_buffer(qobj, &q, 4, "query") < 0) {
        PyBuffer_Release(&m);
        return NULL;
    }
    PyObject *out = NULL;
    Py_ssize_t rows = check_rows(&m, &q, dim, 2);
    if (rows < 0) goto done;
    if (k > rows) k = rows;
    hit *heap = PyMem_Malloc(sizeof(hit) * (size_t)(k ? k : 1));
    if (heap == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = 0;
    const uint16_t *base = m.buf;
    const float *query = q.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; r++) {
        hit h = {dot_f16(base + r * dim, query, dim), r};
        if (n < k) {
            heap[n] = h;
            sift_up(heap, n++);
        } else if (worse(&heap[0], &h)) {
            heap[0] = h;
            sift_down(heap, n, 0);
        }
    }
    qsort(heap, (size_t)n, sizeof(hit), by_rank);
    Py_END_ALLOW_THREADS
    out = PyList_New(n);
    if (out != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *pair = Py_BuildValue("(nd)", heap[i].row, (double)heap[i].score);
            if (pair == NULL) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, i, pair);
        }
    }
    PyMem_Free(heap);
done:
    PyBuffer_Release(&m);
    PyBuffer_Release(&q);
    return out;
}

/* -- dots ---------------------------------------------------------------------------------- */
static PyObject *dots(PyObject *self, PyObject *args) {
    PyObject *mobj, *qobj;
    Py_ssize_t dim;
    if (!PyArg_ParseTuple(args, "OnO:dots", &mobj, &dim, &qobj)) return NULL;
    Py_buffer m, q;
    if (get_buffer(mobj, &m, 4, "matrix") < 0) return NULL;
    if (get_buffer(qobj, &q, 4, "query") < 0) {
        PyBuffer_Release(&m);
        return NULL;
    }
    PyObject *out = NULL;
    Py_ssize_t rows = check_rows(&m, &q, dim, 4);
    if (rows >= 0 && (out = PyList_New(rows)) != NULL) {
        const float *base = m.buf, *query = q.buf;
        for (Py_ssize_t r = 0; r < rows; r++) {
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tail = 0;
            const float *row = base + r * dim;
            Py_ssize_t i = 0;
            for (; i + 8 <= dim; i += 8)
                for (int j = 0; j < 8; j++) acc[j] += row[i + j] * query[i + j];
            for (; i < dim; i++) tail += row[i] * query[i];
            float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                      ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
            PyObject *v = PyFloat_FromDouble((double)s);
            if (v == NULL) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, r, v);
        }
    }
    PyBuffer_Release(&m);
    PyBuffer_Release(&q);
    return out;
}

/* -- mean_rows ----------------------------------------------------------------------------- */
/* numpy's pairwise summation of float32 (numpy/_core/src/umath/loops_utils.h.src). */
static float pairwise_sum(const float *a, Py_ssize_t n) {
    if (n < 8) {
        float res = 0.;
        for (Py_ssize_t i = 0; i < n; i++) res += a[i];
        return res;
    } else if (n <= 128) {
        float r[8];
        for (int j = 0; j < 8; j++) r[j] = a[j];
        Py_ssize_t i;
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    } else {
        Py_ssize_t n2 = n / 2;
        n2 -= n2 % 8;
        return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
    }
}

static PyObject *mean_rows(PyObject *self, PyObject *args) {
    PyObject *tobj, *ids;
    Py_ssize_t dim;
    if (!PyArg_ParseTuple(args, "OnO!:mean_rows", &tobj, &dim, &PyList_Type, &ids)) return NULL;
    if (dim < 1) {
        PyErr_Format(PyExc_ValueError, "dim: expected a positive integer; got %zd", dim);
        return NULL;
    }
    Py_buffer t;
    if (get_buffer(tobj, &t, 2 * dim, "table") < 0) return NULL;
    Py_ssize_t rows = t.len / (2 * dim), n = PyList_GET_SIZE(ids);
    if (rows == 0 && n > 0) {
        PyErr_SetString(PyExc_ValueError, "table: expected at least one row; got none");
        PyBuffer_Release(&t);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, dim * 4);
    float *sq = out != NULL ? PyMem_Malloc(sizeof(float) * (size_t)dim) : NULL;
    if (sq == NULL) {
        if (out != NULL) PyErr_NoMemory();
        Py_CLEAR(out);
        goto done;
    }
    float *acc = (float *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < dim; i++) acc[i] = 0;
    const uint16_t *table = t.buf;
    for (Py_ssize_t j = 0; j < n; j++) {
        Py_ssize_t id = PyLong_AsSsize_t(PyList_GET_ITEM(ids, j));
        if (id == -1 && PyErr_Occurred()) {
            Py_CLEAR(out);
            goto free;
        }
        /* As the numpy path: ids are clipped into the table. */
        if (id < 0) id = 0;
        if (id >= rows) id = rows - 1;
        const uint16_t *row = table + id * dim;
        for (Py_ssize_t i = 0; i < dim; i++) acc[i] += half_to_float(row[i]);
    }
    float count = n > 0 ? (float)n : 1.0f;
    for (Py_ssize_t i = 0; i < dim; i++) {
        float v = acc[i] / count;
        /* numpy.nan_to_num: NaN -> 0, infinities -> the largest finite floats */
        if (isnan(v)) v = 0;
        else if (isinf(v)) v = v > 0 ? 3.4028234663852886e38f : -3.4028234663852886e38f;
        acc[i] = v;
        sq[i] = v * v;
    }
    float norm = sqrtf(pairwise_sum(sq, dim));
    if (norm > 0)
        for (Py_ssize_t i = 0; i < dim; i++) acc[i] /= norm;
free:
    PyMem_Free(sq);
done:
    PyBuffer_Release(&t);
    return out;
}

/* -- views ------------------------------------------------------------------------------- */
/* zlib's own CRC-32 (the one the files were written with): its braided loop is faster than a
 * table of our own, and one CRC implementation cannot disagree with itself. crc32_z takes a
 * size_t length, so a view past 4 GiB needs no splitting. */
static uint32_t crc32_of(const unsigned char *p, size_t n) {
    return (uint32_t)crc32_z(0L, p, n);
}

/* The views' buffers: data, offsets (int64, rows + 1), and optionally crcs and live flags. */
typedef struct {
    Py_buffer data, offsets, crcs, live;
    int has_crcs, has_live;
    Py_ssize_t rows;
} views_t;

static void views_release(views_t *v) {
    PyBuffer_Release(&v->data);
    PyBuffer_Release(&v->offsets);
    if (v->has_crcs) PyBuffer_Release(&v->crcs);
    if (v->has_live) PyBuffer_Release(&v->live);
}

static int views_get(views_t *v, PyObject *data, PyObject *offsets, PyObject *crcs,
                     PyObject *live) {
    memset(v, 0, sizeof *v);
    if (PyObject_GetBuffer(data, &v->data, PyBUF_SIMPLE) < 0) return -1;
    if (get_buffer(offsets, &v->offsets, 8, "offsets") < 0) {
        PyBuffer_Release(&v->data);
        return -1;
    }
    v->rows = v->offsets.len / 8 - 1;
    if (crcs != NULL) {
        if (get_buffer(crcs, &v->crcs, 4, "crcs") < 0) goto fail;
        v->has_crcs = 1;
    }
    if (live != Py_None) {
        if (PyObject_GetBuffer(live, &v->live, PyBUF_SIMPLE) < 0) goto fail;
        v->has_live = 1;
    }
    if (v->rows < 0 || (v->has_crcs && v->crcs.len != 4 * v->rows) ||
        (v->has_live && v->live.len != v->rows)) {
        PyErr_SetString(PyExc_ValueError, "views: offsets, crcs and live flags disagree");
        goto fail;
    }
    const int64_t *off = v->offsets.buf;
    for (Py_ssize_t r = 0; r < v->rows; r++)
        if (off[r] < 0 || off[r] > off[r + 1] || off[r + 1] > v->data.len) {
            PyErr_Format(PyExc_ValueError, "views: row %zd lies outside the data", r);
            goto fail;
        }
    return 0;
fail:
    views_release(v);
    return -1;
}

static int selected(const views_t *v, Py_ssize_t r) {
    return !v->has_live || ((const unsigned char *)v->live.buf)[r];
}

static PyObject *check_views(PyObject *self, PyObject *args) {
    PyObject *data, *offsets, *crcs, *live;
    if (!PyArg_ParseTuple(args, "OOOO:check_views", &data, &offsets, &crcs, &live)) return NULL;
    views_t v;
    if (views_get(&v, data, offsets, crcs, live) < 0) return NULL;
    Py_ssize_t bad = -1;
    const int64_t *off = v.offsets.buf;
    const uint32_t *want = v.crcs.buf;
    const unsigned char *base = v.data.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < v.rows && bad < 0; r++)
        if (selected(&v, r) && crc32_of(base + off[r], (size_t)(off[r + 1] - off[r])) != want[r])
            bad = r;
    Py_END_ALLOW_THREADS
    views_release(&v);
    return PyLong_FromSsize_t(bad);
}

#define BATCH 512 /* views per writev (each with its separator): well under IOV_MAX */

static int write_all(int fd, struct iovec *iov, int n) {
    while (n > 0) {
        ssize_t done = writev(fd, iov, n);
        if (done < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        while (n > 0 && (size_t)done >= iov->iov_len) { /* drop what was written */
            done -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + done;
            iov->iov_len -= (size_t)done;
        }
    }
    return 0;
}

static PyObject *write_views(PyObject *self, PyObject *args) {
    int fd;
    PyObject *data, *offsets, *live;
    Py_buffer sep;
    if (!PyArg_ParseTuple(args, "iOOOy*:write_views", &fd, &data, &offsets, &live, &sep))
        return NULL;
    views_t v;
    if (views_get(&v, data, offsets, NULL, live) < 0) {
        PyBuffer_Release(&sep);
        return NULL;
    }
    struct iovec iov[2 * BATCH];
    int n = 0, failed = 0, first = 1;
    const int64_t *off = v.offsets.buf;
    char *base = v.data.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < v.rows && !failed; r++) {
        if (!selected(&v, r)) continue;
        if (!first) iov[n++] = (struct iovec){sep.buf, (size_t)sep.len};
        first = 0;
        iov[n++] = (struct iovec){base + off[r], (size_t)(off[r + 1] - off[r])};
        if (n >= 2 * BATCH - 1) {
            failed = write_all(fd, iov, n) < 0;
            n = 0;
        }
    }
    if (!failed && n) failed = write_all(fd, iov, n) < 0;
    Py_END_ALLOW_THREADS
    views_release(&v);
    PyBuffer_Release(&sep);
    if (failed) return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

/* find_key(key_offsets_u64, keys, n, key) -> index or -1: binary search over keys sorted by
   their bytes (the item checkpoint's tables, projections/memory/_lazy.py), compared as
   Python compares bytes. A Python loop paid ~17 slices and comparisons per lookup. */
static PyObject *find_key(PyObject *self, PyObject *args) {
    Py_buffer off, keys;
    Py_ssize_t n;
    const char *key;
    Py_ssize_t klen;
    if (!PyArg_ParseTuple(args, "y*y*ny#:find_key", &off, &keys, &n, &key, &klen)) return NULL;
    Py_ssize_t found = -1;
    if (n < 0 || off.len < (n + 1) * (Py_ssize_t)sizeof(uint64_t)) {
        PyBuffer_Release(&off);
        PyBuffer_Release(&keys);
        PyErr_SetString(PyExc_ValueError, "find_key: expected n + 1 key offsets");
        return NULL;
    }
    const uint64_t *o = off.buf;
    const unsigned char *base = keys.buf;
    uint64_t limit = (uint64_t)keys.len;
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        uint64_t a = o[mid], b = o[mid + 1];
        if (a > b || b > limit) { /* damaged offsets: say so rather than read past the end */
            PyBuffer_Release(&off);
            PyBuffer_Release(&keys);
            PyErr_SetString(PyExc_ValueError, "find_key: key offsets out of range");
            return NULL;
        }
        size_t len = (size_t)(b - a), common = len < (size_t)klen ? len : (size_t)klen;
        int c = memcmp(base + a, key, common);
        if (c == 0) c = len < (size_t)klen ? -1 : (len > (size_t)klen ? 1 : 0);
        if (c == 0) {
            found = mid;
            break;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    PyBuffer_Release(&off);
    PyBuffer_Release(&keys);
    return PyLong_FromSsize_t(found);
}

static PyMethodDef methods[] = {
    {"topk", topk, METH_VARARGS, "topk(matrix_f16, dim, query_f32, k) -> [(row, score)]"},
    {"find_key", find_key, METH_VARARGS, "find_key(offsets_u64, keys, n, key) -> index or -1"},
    {"dots", dots, METH_VARARGS, "dots(matrix_f32, dim, query_f32) -> [score]"},
    {"mean_rows", mean_rows, METH_VARARGS, "mean_rows(table_f16, dim, ids) -> bytes"},
    {"check_views", check_views, METH_VARARGS, "check_views(data, offsets, crcs, live) -> row"},
    {"write_views", write_views, METH_VARARGS, "write_views(fd, data, offsets, live, sep)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels", "Vector kernels of the numpy-free cold route.", -1, methods,
};

PyMODINIT_FUNC PyInit__kernels(void) {
    dot_f16 = pick_dot_f16();
    return PyModule_Create(&module);
}
