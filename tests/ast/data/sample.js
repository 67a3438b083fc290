import fs from "node:fs";
import { join } from "node:path";

const DEFAULT_LIMIT = 10;

export class Queue {
  #items = [];

  constructor(limit = DEFAULT_LIMIT) {
    this.limit = limit;
  }

  push(item) {
    if (this.#items.length >= this.limit) {
      throw new Error(`queue full: ${this.limit}`);
    }
    this.#items.push(it<@a>em);
    return this;
  }

  save(dir) {
    fs.writeFileSync(join(dir, "queue.json"), JSON.stringify(this.#items));
  }
}

export const double = (x) => x * <@arrow>2;

function* ids() {
  let n = 0;
  while (true) yield n++;
}
