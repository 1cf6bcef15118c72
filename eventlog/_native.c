/* Sealing's inner loop: WAL event bodies (msgpack maps) straight into Arrow column buffers.
 *
 * The pure-Python seal decodes every body into a msgspec Struct and then transposes the
 * Structs into columns; per event that is microseconds of object churn, which held sealing
 * near 250k events/s. Here each body is walked once and every field value is appended to
 * its column's buffers (validity bitmap, offsets, bytes or fixed-width values), with the
 * GIL released: no Python object is made per event or per field. eventlog._bodies wraps
 * the buffers as pyarrow arrays.
 *
 * Anything this loop does not accept exactly as msgspec's typed decoder would (an unknown
 * field or kind, a wrong type, an out-of-range number, invalid UTF-8, a value outside a
 * Literal, a column past 2 GiB) raises ValueError, and the caller converts those events
 * the Python way, which accepts them or raises the error any reader would. So this code
 * never decides a hard case; it only recognises the common, easy one.
 *
 * Free-form and nested values (JSON columns, the mutation and personality structs) are
 * rare; they come back as (row, kind, msgpack bytes) for msgspec to decode.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_native_blake2b.h"
#include "_native_msgpack.h"
#include "_native_plan.h"

#define MAX_OFFSET INT32_MAX

/* Outcomes of the parsing functions (which run without the GIL, so set no exception). */
enum { OK = 0, REFUSED = -1, NOMEM = -2 };

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

static int buf_put(Buf *b, const void *src, Py_ssize_t n) {
    if (b->len + n > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *p = PyMem_RawRealloc(b->p, cap);
        if (!p) return NOMEM;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
    return OK;
}

typedef struct {
    Py_ssize_t row;
    int kind;
    const uint8_t *p;
    Py_ssize_t n;
} RawRef;

/* A column's buffers are allocated at its first non-null value: a column no event of the
 * batch has (most of the wide schema, for any one batch) costs nothing. Rows never written
 * are null; they are filled in (offsets repeated) when a later row is written. */
typedef struct {
    int type;
    Py_ssize_t rows;     /* capacity: events in the batch */
    Py_ssize_t n, nulls; /* rows written so far (padding included), nulls among them */
    uint8_t *valid;      /* validity bitmap, zeroed */
    uint8_t *bits;       /* bool values */
    char *fixed;         /* int64 or double values */
    int32_t *off;        /* string or list offsets, rows + 1 */
    Buf data;            /* string bytes, or the list items' bytes */
    Buf items;           /* list items' offsets */
    RawRef *raw;         /* free-form values */
    Py_ssize_t nraw, rawcap;
} Col;

static void col_free(Col *c) {
    PyMem_RawFree(c->valid); PyMem_RawFree(c->bits); PyMem_RawFree(c->fixed);
    PyMem_RawFree(c->off); PyMem_RawFree(c->data.p); PyMem_RawFree(c->items.p);
    PyMem_RawFree(c->raw);
}

static int col_alloc(Col *c) {
    Py_ssize_t nb = (c->rows + 7) / 8 + 1;
    if (!(c->valid = PyMem_RawCalloc(nb, 1))) return NOMEM;
    if (c->type == T_BOOL && !(c->bits = PyMem_RawCalloc(nb, 1))) return NOMEM;
    if ((c->type == T_INT || c->type == T_FLOAT) && !(c->fixed = PyMem_RawCalloc(c->rows + 1, 8)))
        return NOMEM;
    if (c->type == T_STR || c->type == T_LIST) {
        if (!(c->off = PyMem_RawCalloc(c->rows + 1, sizeof(int32_t)))) return NOMEM;
    }
    if (c->type == T_LIST) {
        int32_t zero = 0;
        return buf_put(&c->items, &zero, sizeof zero);
    }
    return OK;
}

/* Make rows before ``row`` that were never written nulls; allocate on first use. */
static int col_reach(Col *c, Py_ssize_t row) {
    if (!c->valid && col_alloc(c) < 0) return NOMEM;
    if (c->n >= row) return OK;
    if (c->off) {
        int32_t last = c->off[c->n];
        for (Py_ssize_t i = c->n + 1; i <= row; i++) c->off[i] = last;
    }
    c->nulls += row - c->n;
    c->n = row;
    return OK;
}

static inline void set_bit(uint8_t *bits, Py_ssize_t row) { bits[row >> 3] |= 1u << (row & 7); }

/* Append one msgpack str to ``b``; the new end offset goes to ``*stop``. */
static int push_string(Buf *b, Reader *r, Py_ssize_t *stop) {
    Py_ssize_t n = str_header(r);
    if (n < 0 || !need(r, n) || !utf8_ok(r->p, n)) return REFUSED;
    if (b->len + n > MAX_OFFSET) return REFUSED; /* too big for this way; Python's copes */
    if (buf_put(b, r->p, n) < 0) return NOMEM;
    r->p += n;
    *stop = b->len;
    return OK;
}

static int allowed_ok(const Plan *pl, int col, const char *p, Py_ssize_t n) {
    if (!pl->nallowed[col]) return 1;
    for (int j = 0; j < pl->nallowed[col]; j++)
        if (pl->allowed[col][j].n == n && memcmp(pl->allowed[col][j].p, p, n) == 0) return 1;
    return 0;
}

static int read_float(const uint8_t *p, const uint8_t *end, double *d) {
    Reader r = {p, end};
    int64_t iv;
    if (*p == 0xcb && end - p == 9) {
        uint64_t v = be(p + 1, 8);
        memcpy(d, &v, 8);
    } else if (*p == 0xca && end - p == 5) {
        uint32_t v = (uint32_t)be(p + 1, 4);
        float f;
        memcpy(&f, &v, 4);
        *d = f;
    } else if (read_int(&r, &iv) == 0 && r.p == end) {
        *d = (double)iv; /* msgspec takes an int for a float field */
    } else {
        return REFUSED;
    }
    return isfinite(*d) ? OK : REFUSED;
}

static int put_list(Col *c, Reader *r, const uint8_t *end, Py_ssize_t row) {
    Py_ssize_t n = container_header(r, 0);
    if (n < 0) return REFUSED;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t stop;
        int rc = push_string(&c->data, r, &stop);
        if (rc < 0) return rc;
        int32_t o = (int32_t)stop;
        if (buf_put(&c->items, &o, sizeof o) < 0) return NOMEM;
    }
    Py_ssize_t count = c->items.len / (Py_ssize_t)sizeof(int32_t) - 1;
    if (r->p != end || count > MAX_OFFSET) return REFUSED;
    c->off[row + 1] = (int32_t)count;
    return OK;
}

static int put_raw(Col *c, Py_ssize_t row, int kind, const uint8_t *p, const uint8_t *end) {
    if (c->nraw == c->rawcap) {
        Py_ssize_t cap = c->rawcap ? 2 * c->rawcap : 64;
        RawRef *raw = PyMem_RawRealloc(c->raw, cap * sizeof(RawRef));
        if (!raw) return NOMEM;
        c->raw = raw;
        c->rawcap = cap;
    }
    c->raw[c->nraw++] = (RawRef){row, kind, p, end - p};
    return OK;
}

/* Store the value [p, end) in row ``row`` of column ``col``. */
static int put_value(const Plan *pl, Col *cols, int col, int kind, Py_ssize_t row,
                     const uint8_t *p, const uint8_t *end, int nullable) {
    Col *c = &cols[col];
    Reader r = {p, end};
    int64_t iv;
    double d;
    int rc;
    if (*p == 0xc0) return nullable ? OK : REFUSED; /* nil: the row stays null */
    if (c->type == T_SKIP) return read_int(&r, &iv) < 0 || r.p != end ? REFUSED : OK;
    if (c->type == T_RAW) return put_raw(c, row, kind, p, end);
    if (col_reach(c, row) < 0) return NOMEM;
    switch (c->type) {
    case T_STR: {
        Py_ssize_t at = c->data.len, stop;
        if ((rc = push_string(&c->data, &r, &stop)) < 0) return rc;
        if (r.p != end || !allowed_ok(pl, col, c->data.p + at, stop - at)) return REFUSED;
        c->off[row + 1] = (int32_t)stop;
        break;
    }
    case T_INT:
        if (read_int(&r, &iv) < 0 || r.p != end) return REFUSED;
        memcpy(c->fixed + 8 * row, &iv, 8);
        break;
    case T_FLOAT:
        if (read_float(p, end, &d) < 0) return REFUSED;
        memcpy(c->fixed + 8 * row, &d, 8);
        break;
    case T_BOOL:
        if (end - p != 1 || (*p != 0xc2 && *p != 0xc3)) return REFUSED;
        if (*p == 0xc3) set_bit(c->bits, row);
        break;
    default: /* T_LIST */
        if ((rc = put_list(c, &r, end, row)) < 0) return rc;
    }
    set_bit(c->valid, row);
    c->n = row + 1;
    return OK;
}

/* Per column: the value the current event gave it, or NULL. */
typedef struct {
    const uint8_t **vstart, **vend;
    int *seen;
} Scratch;

static int kind_of(const Plan *pl, const uint8_t *p, const uint8_t *end, int *last) {
    Reader r = {p, end};
    Py_ssize_t n = str_header(&r);
    if (n < 0 || r.p + n != end) return -1;
    const Span *s = &pl->kname[*last];
    if (s->n == n && memcmp(s->p, r.p, n) == 0) return *last;
    for (int k = 0; k < pl->nkinds; k++) {
        s = &pl->kname[k];
        if (s->n == n && memcmp(s->p, r.p, n) == 0) return *last = k;
    }
    return -1;
}

/* Read the map's keys and values, then store the kind's fields (defaults for the absent). */
static int put_fields(const Plan *pl, Col *cols, Scratch *sc, int kind, Py_ssize_t row) {
    for (int j = 0; j < pl->kcount[kind]; j++) {
        int col = pl->kcols[kind][j];
        const uint8_t *vs = sc->vstart[col], *ve = sc->vend[col];
        if (!vs) {
            const Span *d = &pl->kdef[kind][j];
            if (!d->p) return REFUSED; /* a required field is missing */
            vs = (const uint8_t *)d->p;
            ve = vs + d->n;
        }
        sc->vstart[col] = NULL;
        int rc = put_value(pl, cols, col, kind, row, vs, ve, pl->knull[kind][j]);
        if (rc < 0) return rc;
    }
    return OK;
}

static int put_event(const Plan *pl, Col *cols, Scratch *sc, Reader *r, Py_ssize_t row,
                     int *last_kind) {
    Py_ssize_t n = container_header(r, 1);
    if (n < 0 || n > pl->ncols) return REFUSED;
    int nseen = 0, rc = REFUSED, kind;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t klen = str_header(r);
        if (klen < 0 || !need(r, klen)) goto done;
        int col = lookup(pl, (const char *)r->p, klen);
        r->p += klen;
        const uint8_t *start = r->p;
        if (col < 0 || sc->vstart[col] || skip(r, 0) < 0) goto done;
        sc->vstart[col] = start;
        sc->vend[col] = r->p;
        sc->seen[nseen++] = col;
    }
    if (!sc->vstart[pl->kind_col]) goto done;
    kind = kind_of(pl, sc->vstart[pl->kind_col], sc->vend[pl->kind_col], last_kind);
    if (kind < 0 || (rc = put_fields(pl, cols, sc, kind, row)) < 0) goto done;
    for (int j = 0; j < nseen; j++)
        if (sc->vstart[sc->seen[j]]) rc = REFUSED; /* a field this kind does not have */
done:
    for (int j = 0; j < nseen; j++) sc->vstart[sc->seen[j]] = NULL;
    return rc;
}

typedef struct {
    Reader r;
    Py_buffer *views;
    Py_ssize_t nviews, v;
} Bodies;

/* Move to the next event, across the end of a body; 0 if there is none. */
static int has_event(Bodies *b) {
    while (b->r.p == b->r.end && b->v + 1 < b->nviews) {
        b->v++;
        b->r.p = b->views[b->v].buf;
        b->r.end = b->r.p + b->views[b->v].len;
    }
    return b->r.p != b->r.end;
}

/* Parse ``count`` events from the bodies, after skipping the first ``skip_n``. */
static int put_events(const Plan *pl, Col *cols, Scratch *sc, Bodies *b, Py_ssize_t skip_n,
                      Py_ssize_t count, Py_ssize_t *failed_row) {
    int last_kind = 0, rc;
    for (Py_ssize_t i = 0; i < skip_n; i++)
        if (!has_event(b) || skip(&b->r, 0) < 0) return REFUSED;
    for (Py_ssize_t row = 0; row < count; row++) {
        *failed_row = row;
        if (!has_event(b)) return REFUSED; /* fewer events than announced */
        if ((rc = put_event(pl, cols, sc, &b->r, row, &last_kind)) < 0) return rc;
    }
    return has_event(b) ? REFUSED : OK; /* more than announced */
}

/* ------------------------------------------------------------------ results */

static void owned_free(PyObject *cap) { PyMem_RawFree(PyCapsule_GetPointer(cap, "evolog.buffer")); }

/* Hand a buffer to Python without copying it: (address, size, owner), the owner a capsule
 * that frees the memory when pyarrow lets go of it (pyarrow.foreign_buffer). Copying into
 * bytes cost fresh memory, and on this class of machine page faults are dear. The column's
 * pointer is cleared: the buffer is the capsule's now. */
static PyObject *owned(void *pp, Py_ssize_t n) {
    void **slot = (void **)pp;
    if (!*slot) return Py_BuildValue("(nnO)", (Py_ssize_t)0, n, Py_None);
    PyObject *cap = PyCapsule_New(*slot, "evolog.buffer", owned_free);
    if (!cap) return NULL;
    *slot = NULL;
    return Py_BuildValue("(KnN)", (unsigned long long)(uintptr_t)PyCapsule_GetPointer(cap, "evolog.buffer"), n,
                         cap);
}

static PyObject *raw_result(const Col *c) {
    PyObject *list = PyList_New(c->nraw);
    if (!list) return NULL;
    for (Py_ssize_t i = 0; i < c->nraw; i++) {
        const RawRef *x = &c->raw[i];
        PyObject *item = Py_BuildValue("(niy#)", x->row, x->kind, (const char *)x->p, x->n);
        if (!item) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* None for a column no event gave a value (all null); else its null count and buffers. */
static PyObject *col_result(Col *c) {
    if (c->type == T_SKIP) Py_RETURN_NONE;
    if (c->type == T_RAW) return raw_result(c);
    if (!c->valid) Py_RETURN_NONE;
    Py_ssize_t rows = c->rows, nb = (rows + 7) / 8;
    if (col_reach(c, rows) < 0) return PyErr_NoMemory();
    PyObject *valid = owned(&c->valid, nb);
    switch (c->type) {
    case T_STR:
        return Py_BuildValue("(nNNN)", c->nulls, valid, owned(&c->off, 4 * (rows + 1)),
                             owned(&c->data.p, c->data.len));
    case T_INT: case T_FLOAT:
        return Py_BuildValue("(nNN)", c->nulls, valid, owned(&c->fixed, 8 * rows));
    case T_BOOL:
        return Py_BuildValue("(nNN)", c->nulls, valid, owned(&c->bits, nb));
    default: /* T_LIST */
        return Py_BuildValue("(nNNNN)", c->nulls, valid, owned(&c->off, 4 * (rows + 1)),
                             owned(&c->items.p, c->items.len), owned(&c->data.p, c->data.len));
    }
}

static PyObject *results(const Plan *pl, Col *cols) {
    PyObject *out = PyList_New(pl->ncols);
    if (!out) return NULL;
    for (int c = 0; c < pl->ncols; c++) {
        PyObject *item = col_result(&cols[c]);
        if (!item) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, c, item);
    }
    return out;
}

static PyObject *convert(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap, *bodies;
    Py_ssize_t skip_n, count, nviews = 0, failed_row = 0;
    if (!PyArg_ParseTuple(args, "OO!nn", &cap, &PyList_Type, &bodies, &skip_n, &count))
        return NULL;
    Plan *pl = PyCapsule_GetPointer(cap, "evolog.seal_plan");
    if (!pl) return NULL;
    if (count < 0 || skip_n < 0 || !pl->nkinds) {
        PyErr_SetString(PyExc_ValueError, "convert: bad arguments");
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t nb = PyList_GET_SIZE(bodies);
    Py_buffer *views = PyMem_Calloc(nb ? nb : 1, sizeof(Py_buffer));
    Col *cols = PyMem_Calloc(pl->ncols, sizeof(Col));
    Scratch sc = {PyMem_Calloc(pl->ncols, sizeof(uint8_t *)),
                  PyMem_Calloc(pl->ncols, sizeof(uint8_t *)),
                  PyMem_Calloc(pl->ncols + 1, sizeof(int))};
    if (!views || !cols || !sc.vstart || !sc.vend || !sc.seen) { PyErr_NoMemory(); goto out; }
    for (; nviews < nb; nviews++)
        if (PyObject_GetBuffer(PyList_GET_ITEM(bodies, nviews), &views[nviews], PyBUF_SIMPLE) < 0)
            goto out;
    for (int c = 0; c < pl->ncols; c++) {
        cols[c].type = pl->type[c];
        cols[c].rows = count;
    }
    int rc;
    Bodies b = {{NULL, NULL}, views, nviews, 0};
    if (nviews) {
        b.r.p = views[0].buf;
        b.r.end = b.r.p + views[0].len;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = put_events(pl, cols, &sc, &b, skip_n, count, &failed_row);
    Py_END_ALLOW_THREADS
    if (rc == NOMEM) PyErr_NoMemory();
    else if (rc < 0) PyErr_Format(PyExc_ValueError, "event %zd: not a body this way takes", failed_row);
    else result = results(pl, cols);
out:
    if (cols)
        for (int c = 0; c < pl->ncols; c++) col_free(&cols[c]);
    for (Py_ssize_t i = 0; i < nviews; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views); PyMem_Free(cols);
    PyMem_Free(sc.vstart); PyMem_Free(sc.vend); PyMem_Free(sc.seen);
    return result;
}

/* ------------------------------------------------------------------ the id index */

/* The 16 check bits stored above a slot's 48-bit seq (see eventlog._idindex.slot_check):
 * murmur3's finaliser of the key's halves and the seq, never 0 (so a filled slot's seq
 * field can never read as empty after one flipped bit). */
static uint64_t slot_check(const uint8_t key[16], uint64_t seq) {
    uint64_t x = load_le64(key) ^ load_le64(key + 8) ^ seq;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    uint64_t c = x >> 48;
    return c ? c : 1;
}

/* Put (key, seq) into the open-addressing table ``slots`` (24-byte slots: a 16-byte key,
 * then the seq (48 bits) and its check (16 bits) as u64 little-endian; 0 is empty). 1 if
 * a slot was newly filled, 0 if the key was there (its seq is overwritten), -1 if the
 * table is full. */
static int slot_put(uint8_t *slots, Py_ssize_t mask, const uint8_t key[16], uint64_t seq) {
    uint8_t le[8];
    uint64_t field = seq | (slot_check(key, seq) << 48);
    for (int b = 0; b < 8; b++) le[b] = (uint8_t)(field >> (8 * b));
    Py_ssize_t i = (Py_ssize_t)(load_le64(key) & (uint64_t)mask);
    for (Py_ssize_t probes = 0; probes <= mask; probes++, i = (i + 1) & mask) {
        uint8_t *slot = slots + 24 * i;
        if (load_le64(slot + 16) == 0) {
            memcpy(slot, key, 16);
            memcpy(slot + 16, le, 8); /* the seq last: a torn slot reads as empty */
            return 1;
        }
        if (memcmp(slot, key, 16) == 0) {
            memcpy(slot + 16, le, 8);
            return 0;
        }
    }
    return -1;
}

/* The 16-byte index key of an id: BLAKE2b-128 of its UTF-8, lone surrogates passed
 * through as Python's "surrogatepass" does (see eventlog._idindex.key_of). */
static int id_key(PyObject *id, uint8_t key[16]) {
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(id, &n);
    if (utf8) {
        blake2b_16((const uint8_t *)utf8, (size_t)n, key);
        return 0;
    }
    PyErr_Clear();
    PyObject *b = PyUnicode_AsEncodedString(id, "utf-8", "surrogatepass");
    if (!b) return -1;
    blake2b_16((const uint8_t *)PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b), key);
    Py_DECREF(b);
    return 0;
}

/* index_insert(table, header_size, mask, items) -> added: eventlog._idindex's slot insert
 * for many (key, seq) pairs, where a key is 16 bytes or an id (str) to hash first. The
 * Python loop and a hashlib object per id cost about 1.5 us per id, a third of what a
 * group-commit append costs. */
static PyObject *index_insert(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *table, *items;
    Py_ssize_t header, mask, added = 0;
    if (!PyArg_ParseTuple(args, "OnnO!", &table, &header, &mask, &PyList_Type, &items))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(table, &view, PyBUF_WRITABLE) < 0) return NULL;
    PyObject *result = NULL;
    if (header < 0 || mask < 0 || (mask & (mask + 1)) ||
        view.len < header + (mask + 1) * 24) {
        PyErr_SetString(PyExc_ValueError, "index_insert: the table is smaller than its mask");
        goto out;
    }
    uint8_t *slots = (uint8_t *)view.buf + header;
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(items); j++) {
        PyObject *k;
        unsigned long long seq;
        uint8_t key[16];
        if (!PyArg_ParseTuple(PyList_GET_ITEM(items, j), "OK", &k, &seq)) goto out;
        int is_key = PyBytes_Check(k) && PyBytes_GET_SIZE(k) == 16;
        if (seq == 0 || seq >> 48 || !(is_key || PyUnicode_Check(k))) {
            PyErr_SetString(PyExc_ValueError,
                            "index_insert: expected (16-byte key or id, 0 < seq < 2**48) items");
            goto out;
        }
        if (is_key) memcpy(key, PyBytes_AS_STRING(k), 16);
        else if (id_key(k, key) < 0) goto out;
        int rc = slot_put(slots, mask, key, seq);
        if (rc < 0) {
            PyErr_SetString(PyExc_ValueError, "index_insert: the table is full");
            goto out;
        }
        added += rc;
    }
    result = PyLong_FromSsize_t(added);
out:
    PyBuffer_Release(&view);
    return result;
}

/* index_key(id) -> the 16-byte key eventlog._idindex.key_of gives. */
static PyObject *index_key(PyObject *self, PyObject *id) {
    (void)self;
    uint8_t key[16];
    if (!PyUnicode_Check(id)) {
        PyErr_SetString(PyExc_TypeError, "index_key: expected a str");
        return NULL;
    }
    if (id_key(id, key) < 0) return NULL;
    return PyBytes_FromStringAndSize((const char *)key, 16);
}

static PyMethodDef methods[] = {
    {"index_insert", index_insert, METH_VARARGS,
     "index_insert(table, header_size, mask, [(key or id, seq)]) -> slots newly filled"},
    {"index_key", index_key, METH_O, "index_key(id) -> BLAKE2b-128 of the id's UTF-8 (surrogatepass)"},
    {"make_plan", make_plan, METH_VARARGS,
     "make_plan(columns, kinds, kind_col) -> plan\n\n"
     "columns: [(name, type, allowed_literals)]; kinds: [(tag, [(column, nullable, "
     "default_msgpack_or_None)])]."},
    {"convert", convert, METH_VARARGS,
     "convert(plan, bodies, skip, count) -> [column buffers]\n\n"
     "``count`` msgpack event maps in the list of byte strings ``bodies``, after the first "
     "``skip``; ValueError for anything this way does not take."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

/* The id-index slot format this build writes (eventlog._idtable.SLOT_FORMAT). Python uses
 * the inserts only when it matches, so an extension left over from an older build (an
 * editable install not rebuilt) can never write slots the Python side reads as damage. */
#define INDEX_SLOT_FORMAT 2

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "INDEX_SLOT_FORMAT", INDEX_SLOT_FORMAT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
