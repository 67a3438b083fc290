import { EventEmitter } from "events";
import type { Readable } from "stream";

export interface Job {
  id: string;
  run(input: Readable): Promise<number>;
}

enum State {
  Idle,
  Busy,
}

export class Scheduler extends EventEmitter {
  private queue: Job[] = [];
  private state: State = State.Idle;

  constructor(private readonly limit: number) {
    super();
  }

  submit(job: Job): boolean {
    if (this.queue.length >= this.limit) {
      return false;
    }
    this.queue.push(jo<@a>b);
    this.emit("submitted", job.id);
    return true;
  }

  get size(): number {
    return this.queue.length;
  }
}

export function isBusy(s: Scheduler): boolean {
  return s.size > 0 ? true : false;
}
