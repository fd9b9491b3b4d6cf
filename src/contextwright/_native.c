/* contextwright._native: the word profiles of containment dedup in C (issue 33).
 *
 * The pure-Python path (contextwright/stages/profiles.py) stays the reference and the fallback:
 * this module gives the same words and the same shingles, hashed with a keyed SipHash-1-3 per
 * word (the key drawn from os.urandom when the module is first used, as Python keys its own
 * str/bytes hash per process) and CPython's tuple-hash combination of the k word hashes. So a
 * text still cannot be written to collide with another on purpose, and one process never mixes
 * the two hashes: profiles.py picks one at import.
 *
 * ascii_profile(text, k)  -> (number of words, shingle hashes as bytes), for an ASCII str:
 *     words are the maximal runs of [A-Za-z0-9_], lower-cased (what shingle_words gives)
 *     (its own pass, not unicode_profile on text.lower(): 2.3 against 5.1 µs an ASCII dev chunk);
 * unicode_profile(text, k) -> the same for any str already NFKC-normalized and case-folded:
 *     words are the regex's \w+ runs (str.isalnum() characters and "_"), hashed as UTF-8;
 * word_hashes(words, k)   -> the shingle hashes of a list of bytes words (any text);
 * word_bounds(text, ranges) -> (starts, ends): where each comparison word of a str begins and
 *     ends, the words read inside the given (start, end) character ranges (containment's strip);
 *     a word with a non-ASCII character is given once per word of its NFKC, case-folded form.
 *
 * count_words(text, maxsplit) -> len(text.split(None, maxsplit)), without making the pieces;
 * SlotMaker(cls, names, defaults) -> a callable that makes an instance of a __slots__ class with
 *     each named slot set: maker(v0, v1, ...) sets names[i] to vi, the slots not given to their
 *     defaults. No __init__ runs: what a frozen dataclass's __init__ does with 23 object.__setattr__
 *     calls (2.5 µs a Chunk), one allocation and 23 stores (reading a chunk list, issue 33).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

#ifndef Py_T_OBJECT_EX
#define Py_T_OBJECT_EX T_OBJECT_EX
#endif

static uint64_t KEY0, KEY1;
static int KEYED = 0;

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                                  \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                                     \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                                     \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                                  \
    } while (0)

/* SipHash-1-3 of `n` bytes at `p`, keyed with (KEY0, KEY1). */
static uint64_t siphash13(const unsigned char *p, Py_ssize_t n) {
    uint64_t v0 = KEY0 ^ 0x736f6d6570736575ULL, v1 = KEY1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = KEY0 ^ 0x6c7967656e657261ULL, v3 = KEY1 ^ 0x7465646279746573ULL;
    uint64_t b = ((uint64_t)n) << 56, m;
    const unsigned char *end = p + (n & ~(Py_ssize_t)7);
    for (; p != end; p += 8) {
        memcpy(&m, p, 8); /* little-endian hosts; on big-endian the hash differs, consistently */
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t t = 0;
    switch (n & 7) {
    case 7: t |= ((uint64_t)p[6]) << 48; /* fall through */
    case 6: t |= ((uint64_t)p[5]) << 40; /* fall through */
    case 5: t |= ((uint64_t)p[4]) << 32; /* fall through */
    case 4: t |= ((uint64_t)p[3]) << 24; /* fall through */
    case 3: t |= ((uint64_t)p[2]) << 16; /* fall through */
    case 2: t |= ((uint64_t)p[1]) << 8;  /* fall through */
    case 1: t |= ((uint64_t)p[0]);
    }
    b |= t;
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND; SIPROUND; SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* CPython's tuple hash (xxHash lanes) over k word hashes. */
#define XXPRIME_1 11400714785074694791ULL
#define XXPRIME_2 14029467366897019727ULL
#define XXPRIME_5 2870177450012600261ULL
#define XXROTATE(x) ((x << 31) | (x >> 33))

/* The shingle hashes as bytes: one native-endian 64-bit value per shingle (none for fewer than
 * k words). Bytes, not a tuple of ints: no object per shingle, and 8 bytes each in the cache. */
static PyObject *shingles_of(const uint64_t *words, Py_ssize_t n, Py_ssize_t k) {
    if (n < k)
        return PyBytes_FromStringAndSize(NULL, 0);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (n - k + 1) * (Py_ssize_t)sizeof(uint64_t));
    if (out == NULL)
        return NULL;
    uint64_t *h = (uint64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i + k <= n; i++) {
        uint64_t acc = XXPRIME_5;
        for (Py_ssize_t j = 0; j < k; j++) {
            acc += words[i + j] * XXPRIME_2;
            acc = XXROTATE(acc);
            acc *= XXPRIME_1;
        }
        h[i] = acc + (((uint64_t)k) ^ (XXPRIME_5 ^ 3527539UL));
    }
    return out;
}

static int ensure_key(void) {
    if (KEYED)
        return 0;
    PyObject *os = PyImport_ImportModule("os");
    if (os == NULL)
        return -1;
    PyObject *raw = PyObject_CallMethod(os, "urandom", "i", 16);
    Py_DECREF(os);
    if (raw == NULL)
        return -1;
    if (!PyBytes_Check(raw) || PyBytes_GET_SIZE(raw) != 16) {
        Py_DECREF(raw);
        PyErr_SetString(PyExc_RuntimeError, "os.urandom(16) did not give 16 bytes");
        return -1;
    }
    memcpy(&KEY0, PyBytes_AS_STRING(raw), 8);
    memcpy(&KEY1, PyBytes_AS_STRING(raw) + 8, 8);
    Py_DECREF(raw);
    KEYED = 1;
    return 0;
}

static int check_k(Py_ssize_t k) {
    if (k < 1) {
        PyErr_Format(PyExc_ValueError, "k must be at least 1; got %zd", k);
        return -1;
    }
    return 0;
}

static inline int is_word(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A text's scratch buffer of `bytes` bytes and room for its words (at most n / 2 + 1 of n
 * characters); 0, or -1 with MemoryError set. */
static int buffers(Py_ssize_t bytes, Py_ssize_t n, unsigned char **buf, uint64_t **words) {
    *buf = PyMem_Malloc(bytes);
    *words = PyMem_Malloc(sizeof(uint64_t) * (n / 2 + 1));
    if (*buf != NULL && *words != NULL)
        return 0;
    PyMem_Free(*buf);
    PyMem_Free(*words);
    PyErr_NoMemory();
    return -1;
}

/* (w, the shingle hashes of the w word hashes), freeing both buffers. */
static PyObject *profile_of(uint64_t *words, Py_ssize_t w, Py_ssize_t k, unsigned char *buf) {
    PyObject *hashes = shingles_of(words, w, k);
    PyMem_Free(buf);
    PyMem_Free(words);
    return hashes == NULL ? NULL : Py_BuildValue("(nN)", w, hashes);
}

/* The characters of an ASCII str and their number; NULL with ValueError for any other str. */
static const unsigned char *ascii_chars(PyObject *text, const char *caller, Py_ssize_t *n) {
    if (!PyUnicode_IS_ASCII(text)) {
        PyErr_Format(PyExc_ValueError, "%s takes an ASCII str", caller);
        return NULL;
    }
    *n = PyUnicode_GET_LENGTH(text);
    return PyUnicode_1BYTE_DATA(text);
}

static PyObject *ascii_profile(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t k;
    unsigned char *low; /* the lower-cased words */
    uint64_t *words;
    if (!PyArg_ParseTuple(args, "Un:ascii_profile", &text, &k) || check_k(k) < 0 || ensure_key() < 0)
        return NULL;
    Py_ssize_t n;
    const unsigned char *s = ascii_chars(text, "ascii_profile", &n);
    if (s == NULL || buffers(n + 1, n, &low, &words) < 0)
        return NULL;
    Py_ssize_t w = 0, i = 0;
    while (i < n) {
        while (i < n && !is_word(s[i]))
            i++;
        Py_ssize_t start = i;
        while (i < n && is_word(s[i])) {
            unsigned char c = s[i];
            low[i] = (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
            i++;
        }
        if (i > start)
            words[w++] = siphash13(low + start, i - start);
    }
    return profile_of(words, w, k, low);
}

/* The UTF-8 bytes of code point `c` at `out`; their count. */
static Py_ssize_t utf8(Py_UCS4 c, unsigned char *out) {
    if (c < 0x80) {
        out[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (unsigned char)(0xC0 | (c >> 6));
        out[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (c >> 12));
        out[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (c >> 18));
    out[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

/* What the regex \w matches in a str pattern (_sre's SRE_UNI_IS_WORD). */
static inline int is_uni_word(Py_UCS4 c) { return Py_UNICODE_ISALNUM(c) || c == '_'; }

static PyObject *unicode_profile(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t k;
    unsigned char *buf; /* one word's UTF-8 at a time: grown to the longest word, not the text */
    uint64_t *words;
    if (!PyArg_ParseTuple(args, "Un:unicode_profile", &text, &k) || check_k(k) < 0 || ensure_key() < 0)
        return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), cap = 256;
    if (buffers(cap, n, &buf, &words) < 0)
        return NULL;
    Py_ssize_t w = 0, i = 0;
    while (i < n) {
        while (i < n && !is_uni_word(PyUnicode_READ(kind, data, i)))
            i++;
        Py_ssize_t len = 0;
        while (i < n) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (!is_uni_word(c))
                break;
            if (len + 4 > cap) {
                unsigned char *more = PyMem_Realloc(buf, cap * 2);
                if (more == NULL) {
                    PyMem_Free(buf);
                    PyMem_Free(words);
                    return PyErr_NoMemory();
                }
                buf = more;
                cap *= 2;
            }
            len += utf8(c, buf + len);
            i++;
        }
        if (len)
            words[w++] = siphash13(buf, len);
    }
    return profile_of(words, w, k, buf);
}

static PyObject *word_hashes(PyObject *self, PyObject *args) {
    PyObject *list;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "O!n:word_hashes", &PyList_Type, &list, &k) || check_k(k) < 0 || ensure_key() < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n < k)
        return PyTuple_New(0);
    uint64_t *words = PyMem_Malloc(sizeof(uint64_t) * (n ? n : 1));
    if (words == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (!PyBytes_Check(item)) {
            PyMem_Free(words);
            PyErr_Format(PyExc_TypeError, "word_hashes takes a list of bytes; item %zd is %.100s", i,
                         Py_TYPE(item)->tp_name);
            return NULL;
        }
        words[i] = siphash13((const unsigned char *)PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item));
    }
    PyObject *out = shingles_of(words, n, k);
    PyMem_Free(words);
    return out;
}

/* The number of \w+ runs in NFKC(word).casefold(): what containment's comparison reads of a word
 * with a non-ASCII character (shingle_words normalizes the whole text; one word normalized on
 * its own agrees but for rare compatibility characters, and then the counts do not add up and
 * the caller does not strip). -1 with an error set. */
static Py_ssize_t folded_words(PyObject *text, Py_ssize_t start, Py_ssize_t end) {
    static PyObject *normalize = NULL;
    if (normalize == NULL) {
        PyObject *mod = PyImport_ImportModule("unicodedata");
        if (mod == NULL)
            return -1;
        normalize = PyObject_GetAttrString(mod, "normalize");
        Py_DECREF(mod);
        if (normalize == NULL)
            return -1;
    }
    PyObject *word = PyUnicode_Substring(text, start, end);
    if (word == NULL)
        return -1;
    PyObject *norm = PyObject_CallFunction(normalize, "sO", "NFKC", word);
    Py_DECREF(word);
    if (norm == NULL)
        return -1;
    PyObject *folded = PyObject_CallMethod(norm, "casefold", NULL);
    Py_DECREF(norm);
    if (folded == NULL)
        return -1;
    int kind = PyUnicode_KIND(folded);
    const void *data = PyUnicode_DATA(folded);
    Py_ssize_t n = PyUnicode_GET_LENGTH(folded), runs = 0;
    int in = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int w = is_uni_word(PyUnicode_READ(kind, data, i));
        runs += w && !in;
        in = w;
    }
    Py_DECREF(folded);
    return runs;
}

/* Append `start` to starts and `end` to ends, `times` times; -1 with an error set. */
static int append_bounds(PyObject *starts, PyObject *ends, Py_ssize_t start, Py_ssize_t end, Py_ssize_t times) {
    if (times <= 0)
        return 0;
    PyObject *a = PyLong_FromSsize_t(start), *b = PyLong_FromSsize_t(end);
    int bad = a == NULL || b == NULL;
    for (Py_ssize_t j = 0; j < times && !bad; j++)
        bad = PyList_Append(starts, a) < 0 || PyList_Append(ends, b) < 0;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return bad ? -1 : 0;
}

static PyObject *word_bounds(PyObject *self, PyObject *args) {
    PyObject *text, *ranges;
    if (!PyArg_ParseTuple(args, "UO:word_bounds", &text, &ranges))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text), ascii = PyUnicode_IS_ASCII(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *seq = PySequence_Fast(ranges, "ranges must be a sequence of (start, end) pairs");
    if (seq == NULL)
        return NULL;
    PyObject *starts = PyList_New(0), *ends = PyList_New(0);
    if (starts == NULL || ends == NULL)
        goto fail;
    for (Py_ssize_t r = 0; r < PySequence_Fast_GET_SIZE(seq); r++) {
        Py_ssize_t lo, hi;
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, r);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_TypeError, "a range is a (start, end) tuple; got %.100s", Py_TYPE(pair)->tp_name);
            goto fail;
        }
        if (!PyArg_ParseTuple(pair, "nn:word_bounds", &lo, &hi))
            goto fail;
        if (lo < 0 || hi > n || lo > hi) {
            PyErr_Format(PyExc_ValueError, "range (%zd, %zd) is outside the text of %zd characters", lo, hi, n);
            goto fail;
        }
        Py_ssize_t i = lo;
        while (ascii && i < hi) { /* the common case: bytes, no lookup per character */
            const unsigned char *b = data;
            while (i < hi && !is_word(b[i]))
                i++;
            if (i == hi)
                break;
            Py_ssize_t start = i;
            while (i < hi && is_word(b[i]))
                i++;
            if (append_bounds(starts, ends, start, i, 1) < 0)
                goto fail;
        }
        while (i < hi) {
            while (i < hi && !is_uni_word(PyUnicode_READ(kind, data, i)))
                i++;
            if (i == hi)
                break;
            Py_ssize_t start = i;
            Py_UCS4 top = 0;
            while (i < hi) {
                Py_UCS4 c = PyUnicode_READ(kind, data, i);
                if (!is_uni_word(c))
                    break;
                top |= c;
                i++;
            }
            /* an ASCII word is one comparison word; another is as many as it normalizes to */
            Py_ssize_t times = top < 0x80 ? 1 : folded_words(text, start, i);
            if (times < 0 || append_bounds(starts, ends, start, i, times) < 0)
                goto fail;
        }
    }
    Py_DECREF(seq);
    return Py_BuildValue("(NN)", starts, ends);
fail:
    Py_DECREF(seq);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    return NULL;
}

/* ---- ShingleTable: each shingle of the text kept -> the first kept chunk holding it ---------- */

typedef struct {
    PyObject_HEAD
    uint64_t *keys;
    int32_t *owners; /* -1: an empty slot */
    Py_ssize_t cap;  /* a power of two */
    Py_ssize_t used;
} Table;

static Py_ssize_t slot_of(const Table *t, uint64_t key) {
    Py_ssize_t mask = t->cap - 1;
    Py_ssize_t i = (Py_ssize_t)((key * 0x9E3779B97F4A7C15ULL) >> 20) & mask;
    while (t->owners[i] >= 0 && t->keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

static int table_resize(Table *t, Py_ssize_t cap) {
    uint64_t *keys = PyMem_Malloc(sizeof(uint64_t) * cap);
    int32_t *owners = PyMem_Malloc(sizeof(int32_t) * cap);
    if (keys == NULL || owners == NULL) {
        PyMem_Free(keys);
        PyMem_Free(owners);
        PyErr_NoMemory();
        return -1;
    }
    memset(owners, 0xff, sizeof(int32_t) * cap);
    uint64_t *old_keys = t->keys;
    int32_t *old_owners = t->owners;
    Py_ssize_t old_cap = t->cap;
    t->keys = keys;
    t->owners = owners;
    t->cap = cap;
    for (Py_ssize_t i = 0; i < old_cap; i++)
        if (old_owners[i] >= 0) {
            Py_ssize_t j = slot_of(t, old_keys[i]);
            t->keys[j] = old_keys[i];
            t->owners[j] = old_owners[i];
        }
    PyMem_Free(old_keys);
    PyMem_Free(old_owners);
    return 0;
}

static PyObject *table_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "ShingleTable() takes no arguments");
        return NULL;
    }
    Table *t = (Table *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->keys = NULL;
    t->owners = NULL;
    t->cap = 0;
    t->used = 0;
    if (table_resize(t, 64) < 0) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void table_dealloc(Table *t) {
    PyMem_Free(t->keys);
    PyMem_Free(t->owners);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* The hashes of a bytes object from shingles_of, and their number; NULL with an error for others. */
static const uint64_t *hashes_of(PyObject *b, Py_ssize_t *n) {
    if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) % sizeof(uint64_t)) {
        PyErr_SetString(PyExc_TypeError, "shingle hashes are bytes of 8-byte values (a profile's)");
        return NULL;
    }
    *n = PyBytes_GET_SIZE(b) / (Py_ssize_t)sizeof(uint64_t);
    return (const uint64_t *)PyBytes_AS_STRING(b);
}

/* Add each shingle of `h` not in the table yet, owned by `owner`; 0, or -1 with an error set. */
static int table_put(Table *t, const uint64_t *h, Py_ssize_t n, int owner) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((t->used + 1) * 2 > t->cap && table_resize(t, t->cap * 2) < 0)
            return -1;
        uint64_t key;
        memcpy(&key, h + i, sizeof key);
        Py_ssize_t j = slot_of(t, key);
        if (t->owners[j] < 0) { /* the first kept chunk holding it keeps it */
            t->keys[j] = key;
            t->owners[j] = owner;
            t->used++;
        }
    }
    return 0;
}

static PyObject *table_add(Table *t, PyObject *args) {
    PyObject *b;
    int owner;
    if (!PyArg_ParseTuple(args, "Oi:add", &b, &owner))
        return NULL;
    if (owner < 0) {
        PyErr_Format(PyExc_ValueError, "owner must be a chunk's index (>= 0); got %d", owner);
        return NULL;
    }
    Py_ssize_t n;
    const uint64_t *h = hashes_of(b, &n);
    if (h == NULL || table_put(t, h, n, owner) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Append the run (a, b) to `runs`; -1 with an error set. */
static int append_run(PyObject *runs, Py_ssize_t a, Py_ssize_t b) {
    PyObject *run = Py_BuildValue("(nn)", a, b);
    int bad = run == NULL || PyList_Append(runs, run) < 0;
    Py_XDECREF(run);
    return bad ? -1 : 0;
}

/* (main, runs) of a chunk whose shingle i is held by kept chunk own[i] (-1: none), some held:
 * main, the kept chunk holding most of them (ties: the one holding the earliest); runs, the word
 * runs [a, b) the held shingles cover, merged, ascending. */
static PyObject *cover_of(const int32_t *own, Py_ssize_t n, Py_ssize_t k, int32_t top) {
    Py_ssize_t *count = PyMem_Calloc((size_t)top + 1, sizeof(Py_ssize_t));
    Py_ssize_t *first = PyMem_Malloc(((size_t)top + 1) * sizeof(Py_ssize_t));
    PyObject *runs = PyList_New(0), *out = NULL;
    if (count == NULL || first == NULL || runs == NULL) {
        if (runs != NULL)
            PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t a = -1, b = -1; /* the run being merged */
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t o = own[i];
        if (o < 0)
            continue;
        if (count[o]++ == 0)
            first[o] = i;
        if (a >= 0 && i <= b) {
            b = i + k;
            continue;
        }
        if (a >= 0 && append_run(runs, a, b) < 0)
            goto done;
        a = i;
        b = i + k;
    }
    if (append_run(runs, a, b) < 0)
        goto done;
    int32_t main = -1;
    for (int32_t o = 0; o <= top; o++)
        if (count[o] && (main < 0 || count[o] > count[main] || (count[o] == count[main] && first[o] < first[main])))
            main = o;
    PyObject *tuple = PyList_AsTuple(runs);
    if (tuple != NULL)
        out = Py_BuildValue("(iN)", main, tuple);
done:
    PyMem_Free(count);
    PyMem_Free(first);
    Py_XDECREF(runs);
    return out;
}

static PyObject *table_visit(Table *t, PyObject *args) {
    PyObject *b;
    Py_ssize_t k;
    int owner;
    if (!PyArg_ParseTuple(args, "Oni:visit", &b, &k, &owner))
        return NULL;
    if (owner < 0) {
        PyErr_Format(PyExc_ValueError, "owner must be a chunk's index (>= 0); got %d", owner);
        return NULL;
    }
    if (check_k(k) < 0)
        return NULL;
    Py_ssize_t n;
    const uint64_t *h = hashes_of(b, &n);
    if (h == NULL)
        return NULL;
    Py_ssize_t i = 0;
    for (; i < n; i++) {
        uint64_t key;
        memcpy(&key, h + i, sizeof key);
        if (t->owners[slot_of(t, key)] >= 0)
            break;
    }
    if (i == n) { /* nothing of it is kept yet: keep it */
        if (table_put(t, h, n, owner) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    int32_t *own = PyMem_Malloc(sizeof(int32_t) * n), top = 0;
    if (own == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t j = 0; j < i; j++) /* the search above found none of these kept */
        own[j] = -1;
    for (; i < n; i++) {
        uint64_t key;
        memcpy(&key, h + i, sizeof key);
        own[i] = t->owners[slot_of(t, key)];
        if (own[i] > top)
            top = own[i];
    }
    PyObject *out = cover_of(own, n, k, top);
    PyMem_Free(own);
    return out;
}

static Py_ssize_t table_len(Table *t) { return t->used; }

static PyMethodDef TABLE_METHODS[] = {
    {"visit", (PyCFunction)table_visit, METH_VARARGS,
     "visit(hashes, k, owner) -> None when no shingle is in the table (then they are added, owned by "
     "chunk `owner`); else (main, runs): the kept chunk holding most of them (ties: the earliest "
     "held), and the word runs [a, b) the held k-word shingles cover, merged (nothing is added)."},
    {"add", (PyCFunction)table_add, METH_VARARGS,
     "add(hashes, owner) -> None: each shingle not in the table yet, owned by chunk `owner`."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods TABLE_SEQUENCE = {.sq_length = (lenfunc)table_len};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "contextwright._native.ShingleTable",
    .tp_basicsize = sizeof(Table),
    .tp_dealloc = (destructor)table_dealloc,
    .tp_as_sequence = &TABLE_SEQUENCE,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ShingleTable() -> each shingle of the text kept, mapped to the first kept chunk holding it.",
    .tp_methods = TABLE_METHODS,
    .tp_new = table_new,
};

/* count_words(text, maxsplit) -> len(text.split(None, maxsplit)) without making the pieces: the
 * whitespace-separated words of a str (str.split's whitespace: Py_UNICODE_ISSPACE), counting stops
 * at maxsplit + 1; a negative maxsplit counts them all (the budget's lower bound of a chunk's
 * tokens, Meter.at_least, asks this of most chunks it rules out: issue 33). */
static PyObject *count_words(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t maxsplit;
    if (!PyArg_ParseTuple(args, "Un:count_words", &text, &maxsplit))
        return NULL;
    Py_ssize_t limit = (maxsplit < 0 || maxsplit == PY_SSIZE_T_MAX) ? PY_SSIZE_T_MAX : maxsplit + 1;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), words = 0;
    int inside = 0;
/* One loop per storage kind (PyUnicode_READ's switch per character doubled the time). */
#define COUNT_WORDS(T)                                                                             \
    for (Py_ssize_t i = 0; i < n && words < limit; i++) {                                          \
        if (Py_UNICODE_ISSPACE(((const T *)data)[i]))                                              \
            inside = 0;                                                                            \
        else if (!inside) {                                                                        \
            inside = 1;                                                                            \
            words++;                                                                               \
        }                                                                                          \
    }
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        COUNT_WORDS(Py_UCS1)
        break;
    case PyUnicode_2BYTE_KIND:
        COUNT_WORDS(Py_UCS2)
        break;
    default:
        COUNT_WORDS(Py_UCS4)
    }
#undef COUNT_WORDS
    return PyLong_FromSsize_t(words);
}

/* -- SlotMaker: an instance of a __slots__ class without its __init__ ---------------------------- */

typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;
    PyObject *defaults; /* a tuple, one value per slot */
    Py_ssize_t n;
    Py_ssize_t *offsets;
} SlotMaker;

static void maker_dealloc(SlotMaker *self) {
    Py_XDECREF(self->cls);
    Py_XDECREF(self->defaults);
    PyMem_Free(self->offsets);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The offset of slot `name` of `cls`: its member descriptor must be an object slot of `cls`. */
static Py_ssize_t slot_offset(PyTypeObject *cls, PyObject *name) {
    PyObject *dict = cls->tp_dict;
    PyObject *descr = dict == NULL ? NULL : PyDict_GetItemWithError(dict, name);
    if (descr == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "SlotMaker: %R is not a slot of %s", name, cls->tp_name);
        return -1;
    }
    if (!Py_IS_TYPE(descr, &PyMemberDescr_Type) ||
        ((PyMemberDescrObject *)descr)->d_common.d_type != cls) {
        PyErr_Format(PyExc_ValueError, "SlotMaker: %R is not a slot of %s", name, cls->tp_name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != Py_T_OBJECT_EX || member->offset < (Py_ssize_t)sizeof(PyObject) ||
        member->offset + (Py_ssize_t)sizeof(PyObject *) > cls->tp_basicsize) {
        PyErr_Format(PyExc_ValueError, "SlotMaker: %R is not an object slot of %s", name, cls->tp_name);
        return -1;
    }
    return member->offset;
}

static PyObject *maker_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *cls, *names, *defaults;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "SlotMaker() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!:SlotMaker", &PyType_Type, &cls, &PyTuple_Type, &names,
                          &PyTuple_Type, &defaults))
        return NULL;
    PyTypeObject *c = (PyTypeObject *)cls;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (PyTuple_GET_SIZE(defaults) != n) {
        PyErr_SetString(PyExc_ValueError, "SlotMaker: one default per name");
        return NULL;
    }
    /* Every object slot the class has must be named: an unset one would read as missing. */
    Py_ssize_t slots = 0;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(c->tp_dict, &pos, &key, &value))
        if (Py_IS_TYPE(value, &PyMemberDescr_Type) &&
            ((PyMemberDescrObject *)value)->d_member->type == Py_T_OBJECT_EX)
            slots++;
    if (slots != n || c->tp_base != &PyBaseObject_Type || c->tp_dictoffset != 0 ||
        !(c->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        PyErr_Format(PyExc_ValueError,
                     "SlotMaker: %s must derive from object alone and have exactly the %zd named slots",
                     c->tp_name, n);
        return NULL;
    }
    Py_ssize_t *offsets = PyMem_Malloc(sizeof(Py_ssize_t) * (n ? n : 1));
    if (offsets == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_Check(name)) {
            PyMem_Free(offsets);
            PyErr_SetString(PyExc_TypeError, "SlotMaker: names must be str");
            return NULL;
        }
        offsets[i] = slot_offset(c, name);
        for (Py_ssize_t j = 0; offsets[i] >= 0 && j < i; j++)
            if (offsets[j] == offsets[i]) {
                PyErr_Format(PyExc_ValueError, "SlotMaker: %R is named twice", name);
                offsets[i] = -1;
            }
        if (offsets[i] < 0) {
            PyMem_Free(offsets);
            return NULL;
        }
    }
    SlotMaker *self = (SlotMaker *)type->tp_alloc(type, 0);
    if (self == NULL) {
        PyMem_Free(offsets);
        return NULL;
    }
    Py_INCREF(cls);
    Py_INCREF(defaults);
    self->cls = c;
    self->defaults = defaults;
    self->n = n;
    self->offsets = offsets;
    return (PyObject *)self;
}

static PyObject *maker_call(SlotMaker *self, PyObject *args, PyObject *kwargs) {
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "a SlotMaker takes positional values only");
        return NULL;
    }
    Py_ssize_t given = PyTuple_GET_SIZE(args);
    if (given > self->n) {
        PyErr_Format(PyExc_TypeError, "a SlotMaker of %s takes at most %zd values (%zd given)",
                     self->cls->tp_name, self->n, given);
        return NULL;
    }
    PyObject *obj = self->cls->tp_alloc(self->cls, 0);
    if (obj == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        PyObject *v = i < given ? PyTuple_GET_ITEM(args, i) : PyTuple_GET_ITEM(self->defaults, i);
        Py_INCREF(v);
        *(PyObject **)((char *)obj + self->offsets[i]) = v;
    }
    return obj;
}

static PyTypeObject MakerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "contextwright._native.SlotMaker",
    .tp_basicsize = sizeof(SlotMaker),
    .tp_dealloc = (destructor)maker_dealloc,
    .tp_call = (ternaryfunc)maker_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SlotMaker(cls, names, defaults) -> maker: maker(*values) is a new cls with names[i] set "
              "to values[i], the rest to their defaults, without running __init__.",
    .tp_new = maker_new,
};

static PyMethodDef METHODS[] = {
    {"ascii_profile", ascii_profile, METH_VARARGS,
     "ascii_profile(text, k) -> (words, shingle hashes) of an ASCII str: words are the runs of "
     "[A-Za-z0-9_], lower-cased."},
    {"unicode_profile", unicode_profile, METH_VARARGS,
     "unicode_profile(text, k) -> (words, shingle hashes) of a normalized, case-folded str: words are "
     "the regex's \\w+ runs, hashed as UTF-8."},
    {"word_hashes", word_hashes, METH_VARARGS,
     "word_hashes(words, k) -> the shingle hashes of a list of bytes words (none for fewer than k)."},
    {"count_words", count_words, METH_VARARGS,
     "count_words(text, maxsplit) -> len(text.split(None, maxsplit)), without making the pieces."},
    {"word_bounds", word_bounds, METH_VARARGS,
     "word_bounds(text, ranges) -> (starts, ends) of the comparison words of a str inside the "
     "(start, end) ranges: a word with a non-ASCII character once per word it normalizes to."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "contextwright._native",
    "Word profiles for containment dedup in C (see contextwright.stages.profiles), and SlotMaker.", -1, METHODS,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&TableType) < 0 || PyType_Ready(&MakerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&MODULE);
    if (m == NULL)
        return NULL;
    Py_INCREF(&TableType);
    if (PyModule_AddObject(m, "ShingleTable", (PyObject *)&TableType) < 0) {
        Py_DECREF(&TableType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&MakerType);
    if (PyModule_AddObject(m, "SlotMaker", (PyObject *)&MakerType) < 0) {
        Py_DECREF(&MakerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
