/* ring_buffer.c - a fixed-capacity byte ring buffer with a tiny self-test.
 *
 * Written for the vsynth tokenizer corpus: C99 with macros, pointer arithmetic,
 * bit tricks, printf formats and a switch over an enum.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RB_IS_POW2(x) (((x) != 0) && (((x) & ((x) - 1)) == 0))

typedef enum { RB_OK = 0, RB_FULL = -1, RB_EMPTY = -2, RB_BADARG = -3 } rb_status;

typedef struct {
    uint8_t *data;
    size_t cap;   /* power of two */
    size_t head;  /* next write, grows without bound; index = head & (cap - 1) */
    size_t tail;  /* next read */
} ring_buffer;

static rb_status rb_init(ring_buffer *rb, size_t cap) {
    if (rb == NULL || !RB_IS_POW2(cap)) return RB_BADARG;
    rb->data = (uint8_t *)calloc(cap, 1);
    if (!rb->data) return RB_BADARG;
    rb->cap = cap;
    rb->head = rb->tail = 0;
    return RB_OK;
}

static size_t rb_used(const ring_buffer *rb) { return rb->head - rb->tail; }
static size_t rb_free(const ring_buffer *rb) { return rb->cap - rb_used(rb); }

static size_t rb_write(ring_buffer *rb, const void *src, size_t n) {
    const uint8_t *p = (const uint8_t *)src;
    n = RB_MIN(n, rb_free(rb));
    size_t at = rb->head & (rb->cap - 1);
    size_t first = RB_MIN(n, rb->cap - at);
    memcpy(rb->data + at, p, first);
    memcpy(rb->data, p + first, n - first);
    rb->head += n;
    return n;
}

static size_t rb_read(ring_buffer *rb, void *dst, size_t n) {
    uint8_t *p = (uint8_t *)dst;
    n = RB_MIN(n, rb_used(rb));
    size_t at = rb->tail & (rb->cap - 1);
    size_t first = RB_MIN(n, rb->cap - at);
    memcpy(p, rb->data + at, first);
    memcpy(p + first, rb->data, n - first);
    rb->tail += n;
    return n;
}

static const char *rb_status_name(rb_status s) {
    switch (s) {
        case RB_OK: return "ok";
        case RB_FULL: return "full";
        case RB_EMPTY: return "empty";
        case RB_BADARG: return "bad argument";
    }
    return "?";
}

int main(void) {
    ring_buffer rb;
    rb_status st = rb_init(&rb, 12);
    printf("init(12): %s\n", rb_status_name(st));
    assert(rb_init(&rb, 16) == RB_OK);

    char out[32] = {0};
    size_t w = rb_write(&rb, "hello, ring buffer!", 19);
    printf("wrote %zu of 19 bytes, %zu free\n", w, rb_free(&rb));
    size_t r = rb_read(&rb, out, 5);
    out[r] = '\0';
    printf("read %zu: \"%s\" (used=%zu)\n", r, out, rb_used(&rb));
    w = rb_write(&rb, "\t0123\n", 6);
    r = rb_read(&rb, out, sizeof out - 1);
    out[r] = '\0';
    printf("wrap-around read %zu bytes: [%s]\n", r, out);
    for (size_t i = 0; i < r; ++i) printf("%02x%c", (unsigned)(uint8_t)out[i], i + 1 == r ? '\n' : ' ');
    free(rb.data);
    return 0;
}
