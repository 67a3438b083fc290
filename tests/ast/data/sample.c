#include <stdio.h>
#include <stdlib.h>
#include "ring.h"

#define RING_MIN 4

struct ring {
  int *data;
  size_t head, <@field>tail, cap;
};

static int ring_grow(struct ring *r) {
  size_t cap = r->cap ? r->cap * 2 : RING_MIN;
  int *data = realloc(r->data, cap * sizeof *data);
  if (!data) return -1;
  r->data = data;
  r->cap = cap;
  return 0;
}

int ring_push(struct ring *r, int value) {
  if (r->tail - r->head == r->cap && ring_grow(r) != 0) {
    return -1;
  }
  r->data[r->tail++ % r->cap] = val<@a>ue;
  return 0;
}

static const char *(*pick(int which))(void) { return which ? NULL : NULL; }

int main(void) {
  struct ring r = {0};
  for (int i = 0; i < 10; ++i) ring_push(&r, i);
  printf("%zu\n", r.tail - r.head);
  free(r.data);
  return 0;
}
