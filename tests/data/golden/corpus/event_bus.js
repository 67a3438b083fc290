// event_bus.js - a tiny typed-by-convention event bus with wildcard topics and replay.
//
// Written for the vsynth tokenizer corpus: modern JavaScript with classes, private
// fields, arrow functions, template literals, destructuring, async iteration,
// optional chaining, regular expressions and JSON.

'use strict';

const WILDCARD = '*';

class EventBus {
  #handlers = new Map();   // topic -> Set<handler>
  #history = [];
  #maxHistory;

  constructor({ maxHistory = 100 } = {}) {
    this.#maxHistory = maxHistory;
  }

  on(topic, handler) {
    if (typeof handler !== 'function') throw new TypeError(`handler for "${topic}" must be a function`);
    const set = this.#handlers.get(topic) ?? new Set();
    set.add(handler);
    this.#handlers.set(topic, set);
    return () => set.delete(handler);   // unsubscribe
  }

  once(topic) {
    return new Promise((resolve) => {
      const off = this.on(topic, (payload) => { off(); resolve(payload); });
    });
  }

  emit(topic, payload = {}) {
    const event = { topic, payload, at: Date.now() };
    this.#history.push(event);
    if (this.#history.length > this.#maxHistory) this.#history.shift();
    let delivered = 0;
    for (const key of [topic, WILDCARD]) {
      for (const h of this.#handlers.get(key) ?? []) {
        try {
          h(payload, event);
          delivered++;
        } catch (err) {
          console.error(`handler for ${key} threw:`, err?.message ?? err);
        }
      }
    }
    return delivered;
  }

  *replay(pattern = /.*/) {
    for (const e of this.#history) if (pattern.test(e.topic)) yield e;
  }
}

async function* ticks(n, ms) {
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setTimeout(r, ms));
    yield i;
  }
}

async function main() {
  const bus = new EventBus({ maxHistory: 8 });
  const seen = [];
  bus.on(WILDCARD, (_p, { topic }) => seen.push(topic));
  const stop = bus.on('file:saved', ({ path, bytes = 0 }) =>
    console.log(`saved ${path} (${(bytes / 1024).toFixed(1)} KiB)`));

  const firstError = bus.once('build:error');
  for await (const i of ticks(3, 5)) {
    bus.emit('file:saved', { path: `src/mod_${i}.js`, bytes: 1536 * (i + 1) });
  }
  stop();
  bus.emit('build:error', { message: 'Unexpected token } at 12:7', code: 'E_SYNTAX' });
  const { message, code } = await firstError;
  console.log(`error ${code}: ${message}`);
  console.log(JSON.stringify([...bus.replay(/^file:/)].map(({ payload }) => payload.path)));
  console.log('topics seen:', seen.join(' → '));
}

main().catch((e) => { console.error(e); process.exitCode = 1; });
