// result_pipeline.ts - composable validation steps over a discriminated Result type.
//
// Written for the vsynth tokenizer corpus: TypeScript with generics, conditional and
// mapped types, discriminated unions, type guards, enums, readonly tuples, decorators-free
// classes and async/await.

export type Ok<T> = { readonly kind: "ok"; readonly value: T };
export type Err<E = string> = { readonly kind: "err"; readonly error: E; readonly path: readonly string[] };
export type Result<T, E = string> = Ok<T> | Err<E>;

export const ok = <T,>(value: T): Ok<T> => ({ kind: "ok", value });
export const err = <E,>(error: E, path: string[] = []): Err<E> => ({ kind: "err", error, path });

export const isOk = <T, E>(r: Result<T, E>): r is Ok<T> => r.kind === "ok";

type Step<A, B> = (input: A) => Result<B> | Promise<Result<B>>;

type Awaited2<T> = T extends PromiseLike<infer U> ? Awaited2<U> : T;
type Shape<T> = { [K in keyof T]-?: T[K] extends object ? Shape<T[K]> : Awaited2<T[K]> };

enum Severity {
  Info = 1,
  Warning,
  Error = 10,
}

export class Pipeline<A, B> {
  private constructor(private readonly run: Step<A, B>) {}

  static start<T>(): Pipeline<T, T> {
    return new Pipeline<T, T>((x) => ok(x));
  }

  then<C>(next: Step<B, C>, label = "step"): Pipeline<A, C> {
    return new Pipeline<A, C>(async (input) => {
      const r = await this.run(input);
      if (!isOk(r)) return r;
      const n = await next(r.value);
      return isOk(n) ? n : err(n.error, [label, ...n.path]);
    });
  }

  async exec(input: A): Promise<Result<B>> {
    return this.run(input);
  }
}

interface Order {
  id: string;
  items: ReadonlyArray<{ sku: string; qty: number; price: number }>;
  coupon?: string | null;
}

const parse: Step<string, Order> = (raw) => {
  try {
    return ok(JSON.parse(raw) as Order);
  } catch (e: unknown) {
    return err(`invalid JSON: ${(e as Error).message}`);
  }
};

const nonEmpty: Step<Order, Order> = (o) => (o.items.length > 0 ? ok(o) : err("order has no items"));

const total: Step<Order, number> = ({ items, coupon }) => {
  const sum = items.reduce((acc, { qty, price }) => acc + qty * price, 0);
  const discount = coupon?.toUpperCase() === "HALF" ? 0.5 : 1;
  return Number.isFinite(sum) ? ok(Math.round(sum * discount * 100) / 100) : err("non-finite total");
};

const severityOf = (r: Result<unknown>): Severity => (isOk(r) ? Severity.Info : r.path.length > 1 ? Severity.Error : Severity.Warning);

async function main(): Promise<void> {
  const pipeline = Pipeline.start<string>().then(parse, "parse").then(nonEmpty, "check").then(total, "total");
  const inputs: readonly string[] = [
    `{"id":"A-1","items":[{"sku":"pen","qty":3,"price":1.25}],"coupon":"half"}`,
    `{"id":"A-2","items":[]}`,
    `{"id": "A-3", "items": [`,
  ] as const;
  for (const raw of inputs) {
    const r = await pipeline.exec(raw);
    const line = isOk(r) ? `total = ${r.value.toFixed(2)} €` : `failed at ${r.path.join(" › ")}: ${r.error}`;
    console.log(`[${Severity[severityOf(r)]}] ${line}`);
  }
  const s: Shape<{ a?: Promise<number>; b: { c: string } }> = { a: 1, b: { c: "x" } };
  console.log(s);
}

void main();
