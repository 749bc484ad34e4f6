/*
 * Deep record decoding and checking for v2 batches (spec fmt §2.6-2.7), in C.
 *
 * The optional accelerator of logrepair.format.batch: `decode_records` and `check_records` here
 * take the same arguments, return the same values and raise the same FormatError (kind, detail,
 * position) as the pure-Python functions of batch.py, which stay the reference
 * (tests/format/test_records_accel.py holds the two to each other on valid and damaged input).
 * Written here rather than taken from a library because no library reads Kafka's records with
 * Kafka's exact error semantics, and deep iteration has a speed target against kafka-python.
 *
 * Safety: every read is checked against the end of the buffer before it happens; positions are
 * Py_ssize_t and run past the end only by a length just added, which the next read or the final
 * size check then rejects, as in Python. The buffer is held (and released) through the buffer
 * protocol, so bytes, bytearray and memoryview are all read in place.
 *
 * A record is read in two passes: `read_record` walks and checks it, noting where its fields
 * are; only a record that passed is turned into objects.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *record_type;  /* logrepair.format.batch.Record, set by bind() */
static PyObject *format_error; /* logrepair.format.errors.FormatError, set by bind() */

/* --- varints (spec fmt §1.2-1.4): Kafka's limits of 5 and 10 bytes, only the low bits kept --- */

/* The position after the unsigned varint at p (at most max_bytes long: 5 for a varint, 10 for a
 * varlong), or -1 when the input ends inside it or it is longer. Both failures read the same to
 * every caller (a record length: premature EOF; a field: invalid record structure), so they are not
 * told apart. Bits past 64 are dropped, and a varint's caller keeps the low 32, as Kafka does. */
static inline Py_ssize_t
read_uvarint(const uint8_t *d, Py_ssize_t end, Py_ssize_t p, int max_bytes, uint64_t *out)
{
    uint64_t value = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= end)
            return -1;
        uint8_t b = d[p++];
        value |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *out = value;
            return p;
        }
    }
    return -1;
}

static inline int32_t
zigzag32(uint32_t u)
{
    return (int32_t)(u >> 1) ^ -(int32_t)(u & 1);
}

static inline int64_t
zigzag64(uint64_t u)
{
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static inline Py_ssize_t
read_varint(const uint8_t *d, Py_ssize_t end, Py_ssize_t p, int32_t *out)
{
    uint64_t u;
    if (p < end && d[p] < 0x80) { /* one byte: nearly every delta and short length */
        *out = zigzag32(d[p]);
        return p + 1;
    }
    if ((p = read_uvarint(d, end, p, 5, &u)) >= 0)
        *out = zigzag32((uint32_t)u);
    return p;
}

/* --- errors: the same kinds and details as batch.py ------------------------------------------- */

enum error_code {
    E_PREMATURE_EOF,   /* record_count_mismatch */
    E_TRAILING_BYTES,  /* record_count_mismatch */
    E_BAD_LENGTH,      /* a = length, b = bytes remaining after the length varint */
    E_STRUCTURE,       /* a field's varint ends past the buffer or is overlong */
    E_NEGATIVE_HEADERS,
    E_TOO_MANY_HEADERS,
    E_NEGATIVE_HEADER_KEY,
    E_SIZE, /* a = length, b = bytes read */
};

typedef struct {
    enum error_code code;
    long long a, b;
} Error;

static void
raise_error(const Error *e, PyObject *position)
{
    const char *kind = "invalid_records";
    PyObject *detail;
    switch (e->code) {
    case E_PREMATURE_EOF:
        kind = "record_count_mismatch";
        detail = PyUnicode_FromString("Incorrect declared batch size, premature EOF reached");
        break;
    case E_TRAILING_BYTES:
        kind = "record_count_mismatch";
        detail = PyUnicode_FromString(
            "Incorrect declared batch size, records still remaining in file");
        break;
    case E_BAD_LENGTH:
        detail = PyUnicode_FromFormat(
            "Invalid record size: expected %lld bytes in record payload, but instead the buffer "
            "has only %lld remaining bytes.",
            e->a, e->b);
        break;
    case E_STRUCTURE:
        detail = PyUnicode_FromString("Found invalid record structure");
        break;
    case E_NEGATIVE_HEADERS:
        detail = PyUnicode_FromFormat("Found invalid number of record headers %lld", e->a);
        break;
    case E_TOO_MANY_HEADERS:
        detail = PyUnicode_FromFormat(
            "Found invalid number of record headers. %lld is larger than the remaining size of "
            "the buffer",
            e->a);
        break;
    case E_NEGATIVE_HEADER_KEY:
        detail = PyUnicode_FromFormat("Invalid negative header key size %lld", e->a);
        break;
    default: /* E_SIZE */
        detail = PyUnicode_FromFormat(
            "Invalid record size: expected to read %lld bytes in record payload, but instead "
            "read %lld",
            e->a, e->b);
        break;
    }
    if (detail == NULL)
        return;
    PyObject *exc = PyObject_CallFunction(format_error, "sOO", kind, detail, position);
    Py_DECREF(detail);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}

/* --- one record ------------------------------------------------------------------------------- */

typedef struct {
    int64_t timestamp_delta;
    int32_t offset_delta;
    Py_ssize_t key, key_length; /* key_length < 0: null */
    Py_ssize_t value, value_length;
    Py_ssize_t headers; /* where the first header starts */
    int32_t header_count;
} Fields;

/* Reads the record whose body (`length` bytes) starts at `pos`, as batch.py's `_read_record` reads
 * it: fields are read from the whole buffer (a field may run into the next record, which the final
 * size check reports), a negative key or value length is null, header keys are not decoded here. */
static int
read_record(const uint8_t *d, Py_ssize_t end, Py_ssize_t pos, Py_ssize_t length, Fields *f,
            Error *e)
{
    Py_ssize_t p = pos + 1; /* attributes: no bits defined, ignored as Kafka ignores them */
    uint64_t u64;
    int32_t n;

    if (p < end && d[p] < 0x80) {
        f->timestamp_delta = zigzag64(d[p]);
        p++;
    }
    else {
        if ((p = read_uvarint(d, end, p, 10, &u64)) < 0)
            goto structure;
        f->timestamp_delta = zigzag64(u64);
    }
    if ((p = read_varint(d, end, p, &f->offset_delta)) < 0)
        goto structure;
    if ((p = read_varint(d, end, p, &n)) < 0)
        goto structure;
    f->key = p;
    f->key_length = n;
    if (n >= 0)
        p += n;
    if ((p = read_varint(d, end, p, &n)) < 0)
        goto structure;
    f->value = p;
    f->value_length = n;
    if (n >= 0)
        p += n;
    if ((p = read_varint(d, end, p, &n)) < 0)
        goto structure;
    if (n < 0) {
        e->code = E_NEGATIVE_HEADERS;
        e->a = n;
        return -1;
    }
    if (n > end - p) { /* Kafka checks the count against its buffer's remaining bytes */
        e->code = E_TOO_MANY_HEADERS;
        e->a = n;
        return -1;
    }
    f->headers = p;
    f->header_count = n;
    for (int32_t i = 0; i < f->header_count; i++) {
        if ((p = read_varint(d, end, p, &n)) < 0)
            goto structure;
        if (n < 0) {
            e->code = E_NEGATIVE_HEADER_KEY;
            e->a = n;
            return -1;
        }
        p += n;
        if ((p = read_varint(d, end, p, &n)) < 0)
            goto structure;
        if (n >= 0)
            p += n;
    }
    if (p > end) /* the last header value runs past the records (Kafka: IllegalArgumentException) */
        goto structure;
    if (p != pos + length) {
        e->code = E_SIZE;
        e->a = length;
        e->b = p - pos;
        return -1;
    }
    return 0;
structure:
    e->code = E_STRUCTURE;
    return -1;
}

/* The length varint and body bounds of the record at *pos; on success *pos is the body's start. */
static int
read_length(const uint8_t *d, Py_ssize_t end, Py_ssize_t *pos, Py_ssize_t *length, Error *e)
{
    int32_t n;
    Py_ssize_t p;
    if (*pos >= end || (p = read_varint(d, end, *pos, &n)) < 0) {
        e->code = E_PREMATURE_EOF;
        return -1;
    }
    if (n < 0 || n > end - p) {
        e->code = E_BAD_LENGTH;
        e->a = n;
        e->b = end - p;
        return -1;
    }
    *pos = p;
    *length = n;
    return 0;
}

/* How many records to try: a count beyond the buffer fails at premature EOF in either
 * implementation, so clamping it changes nothing but the loop variable's type. */
static int
record_count(PyObject *count, long long *out)
{
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(count, &overflow);
    if (n == -1 && PyErr_Occurred())
        return -1;
    *out = overflow > 0 ? LLONG_MAX : overflow < 0 || n < 0 ? 0 : n;
    return 0;
}

static int
check_bound(void)
{
    if (record_type == NULL || format_error == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "logrepair.format._records: bind() was not called");
        return -1;
    }
    return 0;
}

/* Vectorcall arguments into `out`, as a Python def with these parameter names (the first
 * `required` of them without a default) takes them: the call costs a fraction of what
 * PyArg_ParseTupleAndKeywords costs, which counts once per batch. */
static int
parse_args(const char *function, const char *const *names, int total, int required,
           PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out)
{
    if (nargs > total) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional arguments (%zd given)",
                     function, total, nargs);
        return -1;
    }
    for (int i = 0; i < total; i++)
        out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t keywords = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < keywords; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int i = 0;
        while (i < total && PyUnicode_CompareWithASCIIString(name, names[i]) != 0)
            i++;
        if (i == total) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                         function, name);
            return -1;
        }
        if (out[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", function,
                         names[i]);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < required; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", function,
                         names[i]);
            return -1;
        }
    }
    return 0;
}

/* --- check_records ---------------------------------------------------------------------------- */

PyDoc_STRVAR(check_records_doc,
             "check_records(data, count, position=0)\n--\n\n"
             "What decode_records checks, with the same errors, but nothing built.");

static PyObject *
check_records(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    static const char *const names[] = {"data", "count", "position"};
    PyObject *arg[3];
    Py_buffer view;
    long long count;
    if (check_bound() < 0 ||
        parse_args("check_records", names, 3, 2, args, nargs, kwnames, arg) < 0)
        return NULL;
    PyObject *position = arg[2];
    if (record_count(arg[1], &count) < 0 || PyObject_GetBuffer(arg[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *d = view.buf;
    Py_ssize_t end = view.len, pos = 0, length;
    Fields f;
    Error e;
    int failed = 0;
    for (long long i = 0; i < count; i++) {
        if (read_length(d, end, &pos, &length, &e) < 0 ||
            read_record(d, end, pos, length, &f, &e) < 0) {
            failed = 1;
            break;
        }
        pos += length;
    }
    if (!failed && pos != end) {
        e.code = E_TRAILING_BYTES;
        failed = 1;
    }
    PyBuffer_Release(&view);
    if (failed) {
        PyObject *zero = NULL;
        if (position == NULL)
            position = zero = PyLong_FromLong(0);
        if (position != NULL)
            raise_error(&e, position);
        Py_XDECREF(zero);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* --- decode_records --------------------------------------------------------------------------- */

/* A base value from the batch header plus a record's delta. Header fields always fit in 64 bits,
 * but the Python reference takes any int, so a base that does not fit (or a sum that overflows)
 * goes through Python's arithmetic. */
typedef struct {
    PyObject *obj;
    long long value;
    int overflow; /* -1, 0, 1 as PyLong_AsLongLongAndOverflow reports it */
} Base;

static int
base_init(Base *b, PyObject *obj, const char *name)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be int, not %.100s", name, Py_TYPE(obj)->tp_name);
        return -1;
    }
    b->obj = obj;
    b->value = PyLong_AsLongLongAndOverflow(obj, &b->overflow);
    return b->value == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *
base_plus(const Base *b, long long delta)
{
    long long sum;
    if (!b->overflow && !__builtin_add_overflow(b->value, delta, &sum))
        return PyLong_FromLongLong(sum);
    PyObject *d = PyLong_FromLongLong(delta);
    if (d == NULL)
        return NULL;
    PyObject *out = PyNumber_Add(b->obj, d);
    Py_DECREF(d);
    return out;
}

/* batch.py: seq = base_sequence + offset_delta, less 2**31 above Int.MAX. */
static PyObject *
sequence_of(const Base *b, int32_t offset_delta)
{
    long long sum;
    if (!b->overflow && !__builtin_add_overflow(b->value, (long long)offset_delta, &sum))
        return PyLong_FromLongLong(sum > INT32_MAX ? sum - 2147483648LL : sum);
    PyObject *s = base_plus(b, offset_delta), *bound = NULL, *out = NULL;
    if (s == NULL)
        return NULL;
    if ((bound = PyLong_FromLongLong(INT32_MAX)) != NULL) {
        int above = PyObject_RichCompareBool(s, bound, Py_GT);
        if (above == 0) {
            out = s;
            s = NULL;
        }
        else if (above > 0) {
            PyObject *wrap = PyLong_FromLongLong(2147483648LL);
            if (wrap != NULL) {
                out = PyNumber_Subtract(s, wrap);
                Py_DECREF(wrap);
            }
        }
        Py_DECREF(bound);
    }
    Py_XDECREF(s);
    return out;
}

/* Header keys of one batch nearly always repeat: each distinct key (of the first few) is decoded
 * once per call. Java's UTF-8 decoder replaces malformed input; so does PyUnicode's "replace". */
#define HEADER_KEY_CACHE 8

typedef struct {
    const uint8_t *raw;
    Py_ssize_t length;
    PyObject *text;
} HeaderKey;

typedef struct {
    HeaderKey keys[HEADER_KEY_CACHE];
    int used;
} HeaderKeys;

static PyObject *
header_key(HeaderKeys *cache, const uint8_t *raw, Py_ssize_t length)
{
    for (int i = 0; i < cache->used; i++) {
        HeaderKey *k = &cache->keys[i];
        if (k->length == length && memcmp(k->raw, raw, (size_t)length) == 0) {
            Py_INCREF(k->text);
            return k->text;
        }
    }
    PyObject *text = PyUnicode_DecodeUTF8((const char *)raw, length, "replace");
    if (text != NULL && cache->used < HEADER_KEY_CACHE) {
        HeaderKey *k = &cache->keys[cache->used++];
        k->raw = raw;
        k->length = length;
        k->text = Py_NewRef(text);
    }
    return text;
}

static PyObject *
nullable_bytes(const uint8_t *d, Py_ssize_t start, Py_ssize_t length)
{
    if (length < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)d + start, length);
}

/* The headers tuple of a record `read_record` accepted. Read again with every check: a writable
 * buffer (bytearray, memoryview) could be changed in place by code that runs while objects are
 * allocated (a finalizer), so what held during `read_record` is not relied on for memory safety. */
static PyObject *
build_headers(const uint8_t *d, Py_ssize_t end, const Fields *f, HeaderKeys *cache)
{
    PyObject *headers = PyTuple_New(f->header_count);
    if (headers == NULL || f->header_count == 0)
        return headers;
    Py_ssize_t p = f->headers;
    int32_t n;
    for (int32_t i = 0; i < f->header_count; i++) {
        PyObject *key = NULL, *value = NULL, *pair = NULL;
        if ((p = read_varint(d, end, p, &n)) < 0 || n < 0 || n > end - p)
            goto changed;
        key = header_key(cache, d + p, n);
        p += n;
        if ((p = read_varint(d, end, p, &n)) < 0 || n > end - p)
            goto changed;
        value = nullable_bytes(d, p, n);
        if (n >= 0)
            p += n;
        if (key != NULL && value != NULL)
            pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        PyTuple_SET_ITEM(headers, i, pair);
        continue;
    changed:
        Py_XDECREF(key);
        Py_DECREF(headers);
        PyErr_SetString(PyExc_RuntimeError, "the records buffer changed while being decoded");
        return NULL;
    }
    return headers;
}

typedef struct {
    const uint8_t *d;
    Py_ssize_t end;
    Base base_offset, base_timestamp, base_sequence;
    PyObject *log_append_time; /* None: the record's own timestamp */
    int sequenced;
    HeaderKeys cache;
} Decoder;

/* A Record built as `tuple.__new__(Record, fields)` builds it: the type's own allocator, then the
 * items, never the Python-level constructor. */
static PyObject *
build_record(Decoder *dec, const Fields *f)
{
    PyObject *items[6];
    items[0] = base_plus(&dec->base_offset, f->offset_delta);
    if (dec->log_append_time != Py_None)
        items[1] = Py_NewRef(dec->log_append_time);
    else
        items[1] = base_plus(&dec->base_timestamp, f->timestamp_delta);
    items[2] = nullable_bytes(dec->d, f->key, f->key_length);
    items[3] = nullable_bytes(dec->d, f->value, f->value_length);
    items[4] = build_headers(dec->d, dec->end, f, &dec->cache);
    items[5] = dec->sequenced ? sequence_of(&dec->base_sequence, f->offset_delta)
                              : PyLong_FromLong(-1);
    PyObject *record = NULL;
    if (items[0] && items[1] && items[2] && items[3] && items[4] && items[5])
        record = ((PyTypeObject *)record_type)->tp_alloc((PyTypeObject *)record_type, 6);
    if (record == NULL) {
        for (int i = 0; i < 6; i++)
            Py_XDECREF(items[i]);
        return NULL;
    }
    for (int i = 0; i < 6; i++)
        PyTuple_SET_ITEM(record, i, items[i]);
    return record;
}

/* The smallest record: a length, attributes, two deltas, two null-or-empty lengths and a header
 * count, one byte each. No buffer holds more records than its length over this. */
#define MIN_RECORD_SIZE 7

PyDoc_STRVAR(decode_records_doc,
             "decode_records(data, count, base_offset, base_timestamp, log_append_time, "
             "base_sequence, position=0)\n--\n\n"
             "Decodes exactly `count` records filling all of `data` (DefaultRecord.readFrom "
             "semantics).");

static PyObject *
decode_records(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    static const char *const names[] = {"data",          "count",         "base_offset",
                                        "base_timestamp", "log_append_time", "base_sequence",
                                        "position"};
    PyObject *arg[7];
    Py_buffer view;
    PyObject *records = NULL;
    Decoder dec;
    Fields f;
    Error e;
    long long count;
    Py_ssize_t pos = 0, length, capacity;
    int failed = 0;
    if (check_bound() < 0 ||
        parse_args("decode_records", names, 7, 6, args, nargs, kwnames, arg) < 0 ||
        record_count(arg[1], &count) < 0 ||
        base_init(&dec.base_offset, arg[2], "base_offset") < 0 ||
        base_init(&dec.base_timestamp, arg[3], "base_timestamp") < 0 ||
        base_init(&dec.base_sequence, arg[5], "base_sequence") < 0 ||
        PyObject_GetBuffer(arg[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    dec.log_append_time = arg[4];
    PyObject *position = arg[6];
    dec.cache.used = 0;
    dec.d = view.buf;
    dec.end = view.len;
    dec.sequenced = dec.base_sequence.overflow > 0 ||
                    (dec.base_sequence.overflow == 0 && dec.base_sequence.value >= 0);
    capacity = count < dec.end / MIN_RECORD_SIZE ? (Py_ssize_t)count : dec.end / MIN_RECORD_SIZE;
    if ((records = PyList_New(capacity)) == NULL)
        goto done;
    for (long long i = 0; i < count; i++) {
        if (read_length(dec.d, dec.end, &pos, &length, &e) < 0 ||
            read_record(dec.d, dec.end, pos, length, &f, &e) < 0) {
            failed = 1;
            break;
        }
        if (i >= capacity) { /* cannot happen: each record takes MIN_RECORD_SIZE bytes or more */
            PyErr_SetString(PyExc_SystemError, "decode_records: more records than bytes allow");
            Py_CLEAR(records);
            goto done;
        }
        PyObject *record = build_record(&dec, &f);
        if (record == NULL) {
            Py_CLEAR(records);
            goto done;
        }
        PyList_SET_ITEM(records, (Py_ssize_t)i, record);
        pos += length;
    }
    if (!failed && pos != dec.end) {
        e.code = E_TRAILING_BYTES;
        failed = 1;
    }
    if (failed) {
        Py_CLEAR(records);
        PyObject *zero = NULL;
        if (position == NULL)
            position = zero = PyLong_FromLong(0);
        if (position != NULL)
            raise_error(&e, position);
        Py_XDECREF(zero);
    }
done:
    for (int i = 0; i < dec.cache.used; i++)
        Py_DECREF(dec.cache.keys[i].text);
    PyBuffer_Release(&view);
    return records;
}

/* --- CRC-32C (Castagnoli), the batch checksum (spec fmt §2.3) ---------------------------------
 *
 * Hardware CRC (SSE4.2) over three interleaved streams where the CPU has it, so that checking a
 * batch runs about as fast as the `crc32c` package checking a whole file; a table otherwise. The
 * three streams' CRCs are joined by shifting the first two past the bytes after them: multiplying
 * by x^(8n) modulo the polynomial (reflected), for the one block length used, from tables. */

#define CRC32C_POLY 0x82F63B78u
#define CRC_BLOCK 256 /* bytes of each of the three streams per round (larger blocks alias in the cache) */

static uint32_t crc_table[256];
static uint32_t crc_shift_block[4][256]; /* x^(8 * CRC_BLOCK) times each byte lane */
static int crc_hardware;

/* a * b modulo the polynomial, bit-reflected (x^0 is the top bit). */
static uint32_t
crc_multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = (uint32_t)1 << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return p;
}

static void
crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[n] = c;
    }
    /* x^(8 * CRC_BLOCK): square x^1 up to x^8, then multiply in the powers of CRC_BLOCK's bits. */
    uint32_t x2k = (uint32_t)1 << 30; /* x^1 */
    uint32_t power = (uint32_t)1 << 31; /* x^0 */
    for (int k = 0; k < 3; k++)
        x2k = crc_multmodp(x2k, x2k); /* x^8 after three squarings */
    for (uint64_t n = CRC_BLOCK; n; n >>= 1) {
        if (n & 1)
            power = crc_multmodp(x2k, power);
        x2k = crc_multmodp(x2k, x2k);
    }
    for (int lane = 0; lane < 4; lane++)
        for (uint32_t v = 0; v < 256; v++)
            crc_shift_block[lane][v] = crc_multmodp(power, v << (8 * lane));
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    crc_hardware = __builtin_cpu_supports("sse4.2");
#endif
}

static inline uint32_t
crc_shift(uint32_t crc)
{
    return crc_shift_block[0][crc & 0xFF] ^ crc_shift_block[1][(crc >> 8) & 0xFF] ^
           crc_shift_block[2][(crc >> 16) & 0xFF] ^ crc_shift_block[3][crc >> 24];
}

static uint32_t
crc_software(uint32_t state, const uint8_t *p, Py_ssize_t n)
{
    while (n-- > 0)
        state = crc_table[(state ^ *p++) & 0xFF] ^ (state >> 8);
    return state;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
__attribute__((target("sse4.2"))) static uint32_t
crc_sse42(uint32_t state, const uint8_t *p, Py_ssize_t n)
{
    uint64_t a = state;
    while (n >= 3 * CRC_BLOCK) {
        uint64_t b = 0, c = 0;
        const uint8_t *q = p + CRC_BLOCK, *r = p + 2 * CRC_BLOCK;
        for (int i = 0; i < CRC_BLOCK; i += 8) {
            uint64_t x, y, z;
            memcpy(&x, p + i, 8);
            memcpy(&y, q + i, 8);
            memcpy(&z, r + i, 8);
            a = _mm_crc32_u64(a, x);
            b = _mm_crc32_u64(b, y);
            c = _mm_crc32_u64(c, z);
        }
        a = crc_shift(crc_shift((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
        p += 3 * CRC_BLOCK;
        n -= 3 * CRC_BLOCK;
    }
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        a = _mm_crc32_u64(a, x);
    }
    uint32_t s = (uint32_t)a;
    while (n-- > 0)
        s = _mm_crc32_u8(s, *p++);
    return s;
}
#endif

/* CRC-32C of n bytes, as the `crc32c` package computes it. */
static uint32_t
crc32c(const uint8_t *p, Py_ssize_t n)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (crc_hardware)
        return ~crc_sse42(0xFFFFFFFFu, p, n);
#endif
    return ~crc_software(0xFFFFFFFFu, p, n);
}

PyDoc_STRVAR(crc32c_doc,
             "crc32c(data, hardware=True)\n--\n\n"
             "CRC-32C of data as quiet_run computes it (hardware=False: the table, as where the "
             "CPU has no SSE4.2): for the tests that hold both to the crc32c package.");

static PyObject *
crc32c_py(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer data;
    int hardware = 1;
    if (!PyArg_ParseTuple(args, "y*|p:crc32c", &data, &hardware))
        return NULL;
    uint32_t crc = hardware ? crc32c(data.buf, data.len)
                            : ~crc_software(0xFFFFFFFFu, data.buf, data.len);
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(crc);
}

/* --- quiet runs (see logrepair/format/batch_runs.py, the reference) --------------------------- */

#define NONE_VALUE INT64_MIN

static inline int64_t
read_i64(const uint8_t *p)
{
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u = (u << 8) | p[i];
    return (int64_t)u;
}

static inline int64_t
read_i32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

PyDoc_STRVAR(quiet_run_doc,
             "quiet_run(buf, pos, limit, file_position, max_length, floor, max_last, max_size, "
             "epoch, oi_raw, oi_i, oi_n, oi_base, oi_prev, ti_raw, ti_i, ti_n, ti_base, k_on, "
             "k_bytes, k_index_pos, k_index_offset, k_interval, max_batches=-1)\n--\n\n"
             "The batches at buf[pos:] every per-batch check passes silently (at most "
             "max_batches of them, when not negative); see logrepair.format.batch_runs.");

/* The arguments after the three buffers, in their order, with the buffers' slots skipped. */
enum {
    A_POS = 1, A_LIMIT, A_FILE_POSITION, A_MAX_LENGTH, A_FLOOR, A_MAX_LAST, A_MAX_SIZE, A_EPOCH,
    A_OI_RAW, A_OI_I, A_OI_N, A_OI_BASE, A_OI_PREV,
    A_TI_RAW, A_TI_I, A_TI_N, A_TI_BASE,
    A_K_ON, A_K_BYTES, A_K_INDEX_POS, A_K_INDEX_OFFSET, A_K_INTERVAL,
    A_COUNT,
    A_MAX_BATCHES = A_COUNT /* optional: the run's most batches (its points' bound) */
};

/* An entry point's arguments: `fewest` to `most` of them (a TypeError otherwise), and its int64
 * ones after its buffer (args[0]), each args[i] into v[i], but for the positions `skip` marks
 * (other buffers). -1 with the error set where one is not an int64. */
static int
int64_args(const char *name, PyObject *const *args, Py_ssize_t nargs, int fewest, int most,
           int64_t *v, uint32_t skip)
{
    if (nargs < fewest || nargs > most) {
        if (fewest == most)
            PyErr_Format(PyExc_TypeError, "%s takes %d arguments (%zd given)", name, fewest,
                         nargs);
        else
            PyErr_Format(PyExc_TypeError, "%s takes %d or %d arguments (%zd given)", name,
                         fewest, most, nargs);
        return -1;
    }
    for (Py_ssize_t i = 1; i < nargs; i++) {
        if (skip >> i & 1)
            continue;
        int overflow = 0;
        v[i] = PyLong_AsLongLongAndOverflow(args[i], &overflow);
        if (overflow) {
            PyErr_Format(PyExc_OverflowError, "%s argument %zd out of int64 range", name, i);
            return -1;
        }
        if (v[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

static PyObject *
quiet_run(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    int64_t v[A_COUNT + 1];
    v[A_MAX_BATCHES] = -1;
    if (int64_args("quiet_run", args, nargs, A_COUNT, A_COUNT + 1, v,
                   1u << A_OI_RAW | 1u << A_TI_RAW) < 0)
        return NULL;
    Py_buffer view, oi, ti;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[A_OI_RAW], &oi, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (PyObject_GetBuffer(args[A_TI_RAW], &ti, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&oi);
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *result = NULL;
    const uint8_t *d = view.buf;
    int64_t pos = v[A_POS], start = v[A_POS];
    int64_t limit = v[A_LIMIT] < view.len ? v[A_LIMIT] : view.len;
    int64_t fp = v[A_FILE_POSITION], max_length = v[A_MAX_LENGTH], floor = v[A_FLOOR];
    int64_t max_last = v[A_MAX_LAST], max_size = v[A_MAX_SIZE], epoch = v[A_EPOCH];
    int64_t oi_i = v[A_OI_I], oi_n = v[A_OI_N], oi_base = v[A_OI_BASE], oi_prev = v[A_OI_PREV];
    int64_t ti_i = v[A_TI_I], ti_n = v[A_TI_N], ti_base = v[A_TI_BASE];
    int k_on = v[A_K_ON] != 0;
    int64_t k_bytes = v[A_K_BYTES], k_index_pos = v[A_K_INDEX_POS];
    int64_t k_index_offset = v[A_K_INDEX_OFFSET], k_interval = v[A_K_INTERVAL];
    /* Entries past what the index buffers hold are never read. */
    if (oi_n > oi.len / 8)
        oi_n = oi.len / 8;
    if (ti_n > ti.len / 12)
        ti_n = ti.len / 12;
    if (pos < 0)
        pos = start = limit;
    const uint8_t *oi_d = oi.buf, *ti_d = ti.buf;
    int64_t n = 0, first_offset = NONE_VALUE, last = NONE_VALUE, max_ts = NONE_VALUE;
    int txn = 0;
    /* At most one point per 61 bytes (the smallest batch). */
    int64_t cap = limit > pos ? (limit - pos) / 61 + 1 : 1;
    int64_t max_batches = v[A_MAX_BATCHES] < 0 ? cap : v[A_MAX_BATCHES];
    if (cap > max_batches)
        cap = max_batches > 0 ? max_batches : 1;
    int64_t *points = k_on ? PyMem_RawMalloc((size_t)cap * 3 * sizeof(int64_t)) : NULL;
    if (k_on && points == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    while (pos + 61 <= limit && n < max_batches) {
        const uint8_t *b = d + pos;
        int64_t base = read_i64(b);
        int64_t length = read_i32(b + 8);
        int64_t leader_epoch = read_i32(b + 12);
        int8_t magic = (int8_t)b[16];
        uint32_t crc = (uint32_t)read_i32(b + 17);
        int attributes = b[22]; /* the int16's low byte: all Kafka reads */
        int64_t delta = read_i32(b + 23);
        int64_t ts = read_i64(b + 35);
        int64_t count = read_i32(b + 57);
        int64_t size = length + 12, end = pos + size;
        if (magic != 2 || length < 49 || length > max_length || end > limit || count < 0 ||
            count > delta + 1 || delta < 0 || base < floor || (__int128)base + delta > max_last ||
            size > max_size || (leader_epoch >= 0 && leader_epoch != epoch && epoch != NONE_VALUE))
            break;
        int64_t batch_last = base + delta, position = fp + pos;
        int64_t oi_next = oi_i, oi_offset = oi_prev;
        if (oi_i < oi_n) {
            int64_t rel = read_i32(oi_d + oi_i * 8), entry_pos = read_i32(oi_d + oi_i * 8 + 4);
            if (entry_pos < position)
                break;
            if (entry_pos == position) {
                oi_offset = oi_base + rel; /* the caller keeps offsets far below 2^63 */
                if (rel < 0 || oi_offset < batch_last || (oi_prev != NONE_VALUE && oi_prev >= base))
                    break;
                oi_next = oi_i + 1;
            }
        }
        int64_t ti_next = ti_i;
        while (ti_next < ti_n) {
            int64_t offset = ti_base + read_i32(ti_d + ti_next * 12 + 8);
            if (offset > batch_last)
                break;
            if (offset < batch_last) {
                ti_next = -1;
                break;
            }
            ti_next++;
        }
        if (ti_next < 0)
            break;
        int k_indexed = k_on && k_bytes - k_index_pos > k_interval;
        if (k_indexed && k_index_offset != NONE_VALUE && batch_last <= k_index_offset)
            break;
        if (crc32c(b + 21, size - 21) != crc)
            break;
        if (k_indexed) {
            k_index_offset = batch_last;
            k_index_pos = k_bytes;
        }
        if (k_on) {
            points[3 * n] = k_bytes;
            points[3 * n + 1] = batch_last;
            points[3 * n + 2] = ts;
            k_bytes += size;
        }
        oi_i = oi_next;
        oi_prev = oi_offset;
        ti_i = ti_next;
        if (n == 0)
            first_offset = base;
        n++;
        last = batch_last;
        if (ts > max_ts)
            max_ts = ts;
        if (attributes & 0x10) {
            txn |= 1;
            if ((attributes & 0x30) == 0x30)
                txn |= 2;
        }
        floor = batch_last + 1;
        pos = end;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(LLLLLiLLLLLLy#)", (long long)n, (long long)(n ? pos : start),
                           (long long)first_offset, (long long)last, (long long)max_ts, txn,
                           (long long)oi_i, (long long)oi_prev, (long long)ti_i,
                           (long long)k_bytes, (long long)k_index_pos, (long long)k_index_offset,
                           points ? (const char *)points : "", (Py_ssize_t)(k_on ? n * 3 * 8 : 0));
done:
    PyMem_RawFree(points);
    PyBuffer_Release(&ti);
    PyBuffer_Release(&oi);
    PyBuffer_Release(&view);
    return result;
}

/* --- summary runs (see logrepair/format/summary_runs.py, the reference) ------------------------ */

PyDoc_STRVAR(summary_run_doc,
             "summary_run(buf, pos, limit, file_position, max_length, floor, max_last, top_epoch, "
             "cut_from, keep)\n--\n\n"
             "The audit's per-batch bookkeeping over the valid batches at buf[pos:]; see "
             "logrepair.format.summary_runs.");

enum {
    S_POS = 1, S_LIMIT, S_FILE_POSITION, S_MAX_LENGTH, S_FLOOR, S_MAX_LAST, S_TOP_EPOCH,
    S_CUT_FROM, S_KEEP, S_COUNT
};

static PyObject *
summary_run(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    int64_t v[S_COUNT];
    if (int64_args("summary_run", args, nargs, S_COUNT, S_COUNT, v, 0) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = NULL;
    const uint8_t *d = view.buf;
    int64_t pos = v[S_POS], start = v[S_POS];
    int64_t limit = v[S_LIMIT] < view.len ? v[S_LIMIT] : view.len;
    int64_t fp = v[S_FILE_POSITION], max_length = v[S_MAX_LENGTH], floor = v[S_FLOOR];
    int64_t max_last = v[S_MAX_LAST], top_epoch = v[S_TOP_EPOCH], cut_from = v[S_CUT_FROM];
    if (max_last > INT64_MAX - 1)
        max_last = INT64_MAX - 1; /* the offset after a batch must be an int64 too */
    int kept = v[S_KEEP] <= 0 ? 0 : v[S_KEEP] == 1 ? 4 : 8; /* columns */
    if (pos < 0)
        pos = start = limit;
    /* At most one batch per 61 bytes (the smallest). */
    int64_t cap = limit > pos ? (limit - pos) / 61 + 1 : 1;
    int64_t *columns = kept ? PyMem_RawMalloc((size_t)cap * kept * sizeof(int64_t)) : NULL;
    if (kept && columns == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t n = 0, first = NONE_VALUE, last = NONE_VALUE;
    int64_t epoch_base = NONE_VALUE, cut_position = NONE_VALUE;
    Py_BEGIN_ALLOW_THREADS
    while (pos + 61 <= limit) {
        const uint8_t *b = d + pos;
        int64_t base = read_i64(b);
        int64_t length = read_i32(b + 8);
        int64_t epoch = read_i32(b + 12);
        int8_t magic = (int8_t)b[16];
        uint32_t crc = (uint32_t)read_i32(b + 17);
        int64_t delta = read_i32(b + 23);
        int64_t count = read_i32(b + 57);
        int64_t size = length + 12, end = pos + size;
        if (magic != 2 || length < 49 || length > max_length || end > limit || count < 0 ||
            count > delta + 1 || base < floor || (__int128)base + delta > max_last ||
            crc32c(b + 21, size - 21) != crc)
            break;
        if (epoch > top_epoch && epoch_base != NONE_VALUE)
            break; /* a second rise: the next call reports it */
        int64_t position = fp + pos;
        last = base + delta;
        if (n == 0)
            first = base;
        if (kept) {
            int64_t row[8] = {base, last, crc, position, size, epoch, read_i64(b + 35),
                              read_i64(b + 43)};
            for (int c = 0; c < kept; c++)
                columns[c * cap + n] = row[c];
        }
        n++;
        floor = last + 1;
        pos = end;
        if (epoch > top_epoch) {
            top_epoch = epoch;
            epoch_base = base;
        }
        if (last >= cut_from) {
            cut_position = position;
            cut_from = INT64_MAX;
        }
    }
    Py_END_ALLOW_THREADS
    /* The columns close up: n of each, one after the other. */
    for (int c = 1; c < kept; c++)
        memmove(columns + c * n, columns + c * cap, (size_t)n * sizeof(int64_t));
    result = Py_BuildValue("(LLLLLLLy#)", (long long)n, (long long)(n ? pos : start),
                           (long long)first, (long long)last, (long long)top_epoch,
                           (long long)epoch_base, (long long)cut_position,
                           columns ? (const char *)columns : "",
                           (Py_ssize_t)(kept * n * (Py_ssize_t)sizeof(int64_t)));
done:
    PyMem_RawFree(columns);
    PyBuffer_Release(&view);
    return result;
}

/* --- Kafka's recovery index rule over many batches (storage/index_builder.py's RecoveryIndex) --
 *
 * `index_points` is `RecoveryIndex.add` for each (position, last offset, max timestamp) triple of
 * a buffer of native int64s, on the index's state passed in and returned: it stops before the
 * first triple whose `add` would raise, which the caller then adds the Python way (and raises). */

PyDoc_STRVAR(index_points_doc,
             "index_points(points, base_offset, interval, max_offset_entries, max_time_entries, "
             "offset_entries, time_entries, last_entry_offset, last_time, last_time_offset, "
             "max_ts, max_ts_offset, last_indexed)\n--\n\n"
             "RecoveryIndex.add over native int64 triples, up to the first that would raise: "
             "(consumed, the state in the same order, offset index bytes, time index bytes).");

enum {
    I_BASE = 1, I_INTERVAL, I_MAX_OFFSET_ENTRIES, I_MAX_TIME_ENTRIES, I_OFFSET_ENTRIES,
    I_TIME_ENTRIES, I_LAST_ENTRY_OFFSET, I_LAST_TIME, I_LAST_TIME_OFFSET, I_MAX_TS,
    I_MAX_TS_OFFSET, I_LAST_INDEXED, I_COUNT
};

static void
write_be(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static PyObject *
index_points(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    int64_t v[I_COUNT];
    if (int64_args("index_points", args, nargs, I_COUNT, I_COUNT, v, 0) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t count = view.len / 24;
    int64_t base = v[I_BASE], interval = v[I_INTERVAL];
    int64_t max_offset_entries = v[I_MAX_OFFSET_ENTRIES], max_time_entries = v[I_MAX_TIME_ENTRIES];
    int64_t offset_entries = v[I_OFFSET_ENTRIES], time_entries = v[I_TIME_ENTRIES];
    int64_t last_entry_offset = v[I_LAST_ENTRY_OFFSET], last_time = v[I_LAST_TIME];
    int64_t last_time_offset = v[I_LAST_TIME_OFFSET], max_ts = v[I_MAX_TS];
    int64_t max_ts_offset = v[I_MAX_TS_OFFSET], last_indexed = v[I_LAST_INDEXED];
    /* At most one entry of each kind per triple. */
    uint8_t *offsets = PyMem_RawMalloc((size_t)count * 8 + 1);
    uint8_t *times = PyMem_RawMalloc((size_t)count * 12 + 1);
    PyObject *result = NULL;
    if (offsets == NULL || times == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t k = 0, n_off = 0, n_time = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; k < count; k++) {
        int64_t t[3];
        memcpy(t, (const char *)view.buf + 24 * k, 24);
        int64_t valid = t[0], last = t[1], ts = t[2];
        int64_t new_max_ts = max_ts, new_max_ts_offset = max_ts_offset;
        if (ts > new_max_ts) {
            new_max_ts = ts;
            new_max_ts_offset = last;
        }
        if ((__int128)valid - last_indexed > interval) {
            __int128 relative = (__int128)last - base;
            if (offset_entries >= max_offset_entries ||
                (offset_entries && last <= last_entry_offset) || relative < 0 ||
                relative > INT32_MAX || valid < INT32_MIN || valid > INT32_MAX ||
                time_entries >= max_time_entries)
                break;
            int time_entry = new_max_ts > last_time;
            __int128 time_relative = (__int128)new_max_ts_offset - base;
            if (time_entry && ((time_entries && new_max_ts_offset < last_time_offset) ||
                               time_relative < 0 || time_relative > INT32_MAX))
                break;
            write_be(offsets + 8 * n_off, (uint64_t)relative, 4);
            write_be(offsets + 8 * n_off + 4, (uint64_t)valid, 4);
            n_off++;
            offset_entries++;
            last_entry_offset = last;
            if (time_entry) {
                write_be(times + 12 * n_time, (uint64_t)new_max_ts, 8);
                write_be(times + 12 * n_time + 8, (uint64_t)time_relative, 4);
                n_time++;
                time_entries++;
                last_time = new_max_ts;
                last_time_offset = new_max_ts_offset;
            }
            last_indexed = valid;
        }
        max_ts = new_max_ts;
        max_ts_offset = new_max_ts_offset;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(nLLLLLLLLy#y#)", k, (long long)offset_entries, (long long)time_entries,
                           (long long)last_entry_offset, (long long)last_time,
                           (long long)last_time_offset, (long long)max_ts,
                           (long long)max_ts_offset, (long long)last_indexed, (const char *)offsets,
                           (Py_ssize_t)(8 * n_off), (const char *)times, (Py_ssize_t)(12 * n_time));
done:
    PyMem_RawFree(offsets);
    PyMem_RawFree(times);
    PyBuffer_Release(&view);
    return result;
}

/* --- append runs (see logrepair/format/append_runs.py, the reference) ---------------------------
 *
 * A follower's append summed up in one pass: the batches the walker's fast path takes, their first
 * and last offsets, the largest timestamp and where it is, the leader epochs to assign, and what
 * producer state reads of each batch with a producer id, stopping before the first batch that
 * needs the walker. */

PyDoc_STRVAR(append_run_doc,
             "append_run(buf, max_length)\n--\n\n"
             "(n, end, first, last, max_ts, ts_offset, epochs, producers, txn) of the batches at the "
             "start of buf that the walker's fast path takes; see logrepair.format.append_runs.");

static PyObject *
append_run(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    int64_t v[2];
    if (int64_args("append_run", args, nargs, 2, 2, v, 0) < 0)
        return NULL;
    int64_t max_length = v[1];
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = NULL;
    const uint8_t *d = view.buf;
    int64_t limit = view.len, pos = 0, n = 0;
    int64_t first = NONE_VALUE, last = NONE_VALUE, floor = NONE_VALUE;
    int64_t max_ts = -1, ts_offset = NONE_VALUE, assigned = -1, n_epochs = 0;
    int64_t n_producers = 0;
    int txn = 0;
    /* At most one epoch pair and one producer row per 61 bytes (the smallest batch). */
    size_t cap = (size_t)(limit / 61 + 1);
    int64_t *epochs = PyMem_RawMalloc(cap * 2 * sizeof(int64_t));
    int64_t *producers = PyMem_RawMalloc(cap * 6 * sizeof(int64_t));
    if (epochs == NULL || producers == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    while (pos + 61 <= limit) {
        const uint8_t *b = d + pos;
        int64_t base = read_i64(b);
        int64_t length = read_i32(b + 8);
        int64_t epoch = read_i32(b + 12);
        int8_t magic = (int8_t)b[16];
        uint32_t crc = (uint32_t)read_i32(b + 17);
        int attributes = b[22]; /* the int16's low byte: all Kafka reads */
        int64_t delta = read_i32(b + 23);
        int64_t ts = read_i64(b + 35);
        int64_t producer_id = read_i64(b + 43);
        int64_t count = read_i32(b + 57);
        int64_t end = pos + 12 + length;
        if (magic != 2 || length < 49 || length > max_length || end > limit || delta < 0 ||
            count < 0 || count > delta + 1 || base < floor || base >= INT64_MAX - delta ||
            crc32c(b + 21, end - pos - 21) != crc)
            break;
        int64_t batch_last = base + delta;
        if (n == 0)
            first = base;
        n++;
        last = batch_last;
        if (ts > max_ts) {
            max_ts = ts;
            ts_offset = batch_last;
        }
        if (producer_id >= 0) {
            int64_t *row = producers + 6 * n_producers++;
            row[0] = producer_id;
            row[1] = (int16_t)((uint16_t)b[51] << 8 | b[52]); /* producer epoch */
            row[2] = read_i32(b + 53);                         /* base sequence */
            row[3] = base;
            row[4] = batch_last;
            row[5] = ts;
            if (attributes & 0x30) /* transactional or control */
                txn = 1;
        }
        if (epoch >= 0 && epoch != assigned) {
            epochs[2 * n_epochs] = epoch;
            epochs[2 * n_epochs + 1] = base;
            n_epochs++;
            assigned = epoch;
        }
        floor = batch_last + 1;
        pos = end;
    }
    Py_END_ALLOW_THREADS
    if (ts_offset == NONE_VALUE)
        ts_offset = last;
    result = Py_BuildValue("(LLLLLLy#y#N)", (long long)n, (long long)pos, (long long)first,
                           (long long)last, (long long)max_ts, (long long)ts_offset,
                           (const char *)epochs, (Py_ssize_t)(n_epochs * 2 * 8),
                           (const char *)producers, (Py_ssize_t)(n_producers * 6 * 8),
                           PyBool_FromLong(txn));
done:
    PyMem_RawFree(producers);
    PyMem_RawFree(epochs);
    PyBuffer_Release(&view);
    return result;
}

/* --- module ----------------------------------------------------------------------------------- */

PyDoc_STRVAR(bind_doc,
             "bind(record_type, format_error)\n--\n\n"
             "Sets the Record NamedTuple the decoder builds and the FormatError it raises.");

static PyObject *
bind(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *rt, *fe;
    if (!PyArg_ParseTuple(args, "O!O!:bind", &PyType_Type, &rt, &PyType_Type, &fe))
        return NULL;
    PyTypeObject *t = (PyTypeObject *)rt;
    /* Items are set in place, so the type must be laid out exactly as a tuple (no __dict__). */
    if (!PyType_IsSubtype(t, &PyTuple_Type) || t->tp_basicsize != PyTuple_Type.tp_basicsize ||
        t->tp_itemsize != PyTuple_Type.tp_itemsize) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a tuple subclass without slots");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)fe, (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "format_error must be an exception type");
        return NULL;
    }
    Py_XSETREF(record_type, Py_NewRef(rt));
    Py_XSETREF(format_error, Py_NewRef(fe));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS, bind_doc},
    {"check_records", (PyCFunction)(void (*)(void))check_records, METH_FASTCALL | METH_KEYWORDS,
     check_records_doc},
    {"decode_records", (PyCFunction)(void (*)(void))decode_records,
     METH_FASTCALL | METH_KEYWORDS, decode_records_doc},
    {"quiet_run", (PyCFunction)(void (*)(void))quiet_run, METH_FASTCALL, quiet_run_doc},
    {"index_points", (PyCFunction)(void (*)(void))index_points, METH_FASTCALL, index_points_doc},
    {"append_run", (PyCFunction)(void (*)(void))append_run, METH_FASTCALL, append_run_doc},
    {"summary_run", (PyCFunction)(void (*)(void))summary_run, METH_FASTCALL, summary_run_doc},
    {"crc32c", crc32c_py, METH_VARARGS, crc32c_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "logrepair.format._records",
    .m_doc = "Deep record decoding and checking for v2 batches; see logrepair.format.batch.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__records(void)
{
    crc_init();
    PyObject *m = PyModule_Create(&module);
#ifdef SOURCE_SHA256 /* set by setup.py: which source this build came from */
    if (m != NULL && PyModule_AddStringConstant(m, "SOURCE_SHA256", SOURCE_SHA256) < 0)
        Py_CLEAR(m);
#endif
    return m;
}
