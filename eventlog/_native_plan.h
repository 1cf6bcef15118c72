/* The plan of eventlog/_native.c: per column its storage and name, per kind its columns,
 * which of them may be nil, and the msgpack encoding of each default. Built once from a
 * description eventlog._bodies derives from the msgspec types; kept in a capsule. */
#ifndef EVOLOG_NATIVE_PLAN_H
#define EVOLOG_NATIVE_PLAN_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { T_SKIP = 0, T_STR = 1, T_INT = 2, T_FLOAT = 3, T_BOOL = 4, T_LIST = 5, T_RAW = 6 };


typedef struct {
    const char *p;
    Py_ssize_t n;
} Span;

typedef struct {
    int ncols, nkinds, kind_col, tabmask;
    int *type;            /* per column */
    Span *name;           /* per column (owned copies) */
    int *tab;             /* name hash table: column index or -1 */
    int *nallowed;        /* per column: Literal values, 0 = any string */
    Span **allowed;
    Span *kname;          /* per kind: its tag */
    int *kcount;          /* per kind: how many columns it has */
    int **kcols;          /* per kind: its columns */
    unsigned char **knull;/* per kind, per listed column: may be nil */
    Span **kdef;          /* per kind, per listed column: default encoding (p NULL = required) */
} Plan;

static uint32_t hash_bytes(const char *p, Py_ssize_t n) {
    uint32_t h = 2166136261u; /* FNV-1a: keys are short field names */
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

static void span_free(Span *s) { PyMem_Free((void *)s->p); s->p = NULL; }

static void plan_free(Plan *pl) {
    if (!pl) return;
    for (int c = 0; c < pl->ncols; c++) {
        if (pl->name) span_free(&pl->name[c]);
        if (pl->allowed && pl->allowed[c]) {
            for (int j = 0; j < pl->nallowed[c]; j++) span_free(&pl->allowed[c][j]);
            PyMem_Free(pl->allowed[c]);
        }
    }
    for (int k = 0; k < pl->nkinds; k++) {
        if (pl->kname) span_free(&pl->kname[k]);
        if (pl->kdef && pl->kdef[k]) {
            for (int j = 0; j < pl->kcount[k]; j++) span_free(&pl->kdef[k][j]);
            PyMem_Free(pl->kdef[k]);
        }
        if (pl->kcols) PyMem_Free(pl->kcols[k]);
        if (pl->knull) PyMem_Free(pl->knull[k]);
    }
    PyMem_Free(pl->type); PyMem_Free(pl->name); PyMem_Free(pl->tab);
    PyMem_Free(pl->nallowed); PyMem_Free(pl->allowed); PyMem_Free(pl->kname);
    PyMem_Free(pl->kcount); PyMem_Free(pl->kcols); PyMem_Free(pl->knull); PyMem_Free(pl->kdef);
    PyMem_Free(pl);
}

static void capsule_free(PyObject *cap) {
    plan_free((Plan *)PyCapsule_GetPointer(cap, "evolog.seal_plan"));
}

static int span_copy(Span *dst, PyObject *obj) {
    const char *p;
    Py_ssize_t n;
    if (PyUnicode_Check(obj)) {
        p = PyUnicode_AsUTF8AndSize(obj, &n);
        if (!p) return -1;
    } else if (PyBytes_Check(obj)) {
        p = PyBytes_AS_STRING(obj);
        n = PyBytes_GET_SIZE(obj);
    } else {
        PyErr_SetString(PyExc_TypeError, "plan: expected str or bytes");
        return -1;
    }
    char *q = PyMem_Malloc(n ? n : 1);
    if (!q) { PyErr_NoMemory(); return -1; }
    memcpy(q, p, n);
    dst->p = q;
    dst->n = n;
    return 0;
}

static int lookup(const Plan *pl, const char *p, Py_ssize_t n) {
    uint32_t i = hash_bytes(p, n) & pl->tabmask;
    for (;;) {
        int c = pl->tab[i];
        if (c < 0) return -1;
        if (pl->name[c].n == n && memcmp(pl->name[c].p, p, n) == 0) return c;
        i = (i + 1) & pl->tabmask;
    }
}

static int plan_columns(Plan *pl, PyObject *columns) {
    int n = pl->ncols;
    int size = 8;
    while (size < 4 * n) size *= 2;
    pl->tabmask = size - 1;
    pl->type = PyMem_Calloc(n, sizeof(int));
    pl->name = PyMem_Calloc(n, sizeof(Span));
    pl->tab = PyMem_Malloc(size * sizeof(int));
    pl->nallowed = PyMem_Calloc(n, sizeof(int));
    pl->allowed = PyMem_Calloc(n, sizeof(Span *));
    if (!pl->type || !pl->name || !pl->tab || !pl->nallowed || !pl->allowed) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < size; i++) pl->tab[i] = -1;
    for (int c = 0; c < n; c++) {
        PyObject *name, *allowed;
        int type;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(columns, c), "UiO!", &name, &type, &PyTuple_Type,
                              &allowed))
            return -1;
        if (type < T_SKIP || type > T_RAW) {
            PyErr_SetString(PyExc_ValueError, "plan: unknown column type");
            return -1;
        }
        pl->type[c] = type;
        if (span_copy(&pl->name[c], name) < 0) return -1;
        if (lookup(pl, pl->name[c].p, pl->name[c].n) >= 0) {
            PyErr_SetString(PyExc_ValueError, "plan: duplicate column name");
            return -1;
        }
        uint32_t i = hash_bytes(pl->name[c].p, pl->name[c].n) & pl->tabmask;
        while (pl->tab[i] >= 0) i = (i + 1) & pl->tabmask;
        pl->tab[i] = c;
        Py_ssize_t na = PyTuple_GET_SIZE(allowed);
        if (na) {
            pl->allowed[c] = PyMem_Calloc(na, sizeof(Span));
            if (!pl->allowed[c]) { PyErr_NoMemory(); return -1; }
            pl->nallowed[c] = (int)na;
            for (Py_ssize_t j = 0; j < na; j++)
                if (span_copy(&pl->allowed[c][j], PyTuple_GET_ITEM(allowed, j)) < 0) return -1;
        }
    }
    return 0;
}

static int plan_kind(Plan *pl, int k, PyObject *spec) {
    PyObject *tag, *fields;
    if (!PyArg_ParseTuple(spec, "UO!", &tag, &PyList_Type, &fields)) return -1;
    if (span_copy(&pl->kname[k], tag) < 0) return -1;
    int m = (int)PyList_GET_SIZE(fields);
    pl->kcount[k] = m;
    pl->kcols[k] = PyMem_Calloc(m ? m : 1, sizeof(int));
    pl->knull[k] = PyMem_Calloc(m ? m : 1, 1);
    pl->kdef[k] = PyMem_Calloc(m ? m : 1, sizeof(Span));
    if (!pl->kcols[k] || !pl->knull[k] || !pl->kdef[k]) { PyErr_NoMemory(); return -1; }
    for (int j = 0; j < m; j++) {
        int col, nullable;
        PyObject *dflt;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(fields, j), "ipO", &col, &nullable, &dflt))
            return -1;
        if (col < 0 || col >= pl->ncols) {
            PyErr_SetString(PyExc_ValueError, "plan: column index out of range");
            return -1;
        }
        pl->kcols[k][j] = col;
        pl->knull[k][j] = (unsigned char)nullable;
        if (dflt != Py_None && span_copy(&pl->kdef[k][j], dflt) < 0) return -1;
    }
    return 0;
}

static PyObject *make_plan(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *columns, *kinds;
    int kind_col;
    if (!PyArg_ParseTuple(args, "O!O!i", &PyList_Type, &columns, &PyList_Type, &kinds,
                          &kind_col))
        return NULL;
    Plan *pl = PyMem_Calloc(1, sizeof(Plan));
    if (!pl) return PyErr_NoMemory();
    pl->ncols = (int)PyList_GET_SIZE(columns);
    pl->nkinds = (int)PyList_GET_SIZE(kinds);
    pl->kind_col = kind_col;
    if (plan_columns(pl, columns) < 0) goto fail;
    if (kind_col < 0 || kind_col >= pl->ncols || pl->type[kind_col] != T_STR) {
        PyErr_SetString(PyExc_ValueError, "plan: the kind column must be a string column");
        goto fail;
    }
    pl->kname = PyMem_Calloc(pl->nkinds ? pl->nkinds : 1, sizeof(Span));
    pl->kcount = PyMem_Calloc(pl->nkinds ? pl->nkinds : 1, sizeof(int));
    pl->kcols = PyMem_Calloc(pl->nkinds ? pl->nkinds : 1, sizeof(int *));
    pl->knull = PyMem_Calloc(pl->nkinds ? pl->nkinds : 1, sizeof(unsigned char *));
    pl->kdef = PyMem_Calloc(pl->nkinds ? pl->nkinds : 1, sizeof(Span *));
    if (!pl->kname || !pl->kcount || !pl->kcols || !pl->knull || !pl->kdef) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int k = 0; k < pl->nkinds; k++)
        if (plan_kind(pl, k, PyList_GET_ITEM(kinds, k)) < 0) goto fail;
    PyObject *cap = PyCapsule_New(pl, "evolog.seal_plan", capsule_free);
    if (!cap) goto fail;
    return cap;
fail:
    plan_free(pl);
    return NULL;
}

#endif
