// One tree type serves both the JSON input decoder and the YAML-subset reader,
// so plugin code walks lnetctl documents and ABI input with the same calls.

export const enum Kind {
  Null = 0,
  Bool = 1,
  Number = 2,
  String = 3,
  Array = 4,
  Object = 5,
}

export class Value {
  kind: i32;
  str: string;
  num: f64;
  // Lazily allocated: scalars vastly outnumber containers in lnetctl output,
  // and two empty arrays per scalar would dominate parse time.
  keys: Array<string> | null = null;
  items: Array<Value> | null = null;
  /** 1-based source line (YAML only; 0 for JSON). */
  line: i32 = 0;

  constructor(kind: i32, str: string = "", num: f64 = 0) {
    this.kind = kind;
    this.str = str;
    this.num = num;
  }

  static newObject(): Value {
    const v = new Value(Kind.Object);
    v.keys = new Array<string>();
    v.items = new Array<Value>();
    return v;
  }

  static newArray(): Value {
    const v = new Value(Kind.Array);
    v.items = new Array<Value>();
    return v;
  }

  static newString(s: string): Value {
    return new Value(Kind.String, s);
  }

  static newNull(): Value {
    return new Value(Kind.Null);
  }

  get isObject(): bool {
    return this.kind == Kind.Object;
  }
  get isArray(): bool {
    return this.kind == Kind.Array;
  }
  get isString(): bool {
    return this.kind == Kind.String;
  }
  get isNull(): bool {
    return this.kind == Kind.Null;
  }

  /** Number of entries (object) or items (array); 0 for scalars. */
  get length(): i32 {
    const items = this.items;
    return items === null ? 0 : items.length;
  }

  /** Object lookup; the last duplicate wins, as with JSON.parse. */
  get(key: string): Value | null {
    const keys = this.keys;
    const items = this.items;
    if (keys === null || items === null) return null;
    for (let i = keys.length - 1; i >= 0; i--) {
      if (keys[i] == key && i < items.length) return items[i];
    }
    return null;
  }

  has(key: string): bool {
    return this.get(key) !== null;
  }

  /** Item (array) or entry value (object) by position; null when out of range. */
  at(i: i32): Value | null {
    const items = this.items;
    if (items === null || i < 0 || i >= items.length) return null;
    return items[i];
  }

  keyAt(i: i32): string {
    const keys = this.keys;
    if (keys === null || i < 0 || i >= keys.length) return "";
    return keys[i];
  }

  set(key: string, v: Value): void {
    const keys = this.keys;
    const items = this.items;
    if (keys === null || items === null) return;
    keys.push(key);
    items.push(v);
  }

  push(v: Value): void {
    const items = this.items;
    if (items === null) return;
    items.push(v);
  }

  /** Scalar as text: strings verbatim, numbers/bools rendered, containers and null as "". */
  text(): string {
    if (this.kind == Kind.String) return this.str;
    if (this.kind == Kind.Bool) return this.num != 0 ? "true" : "false";
    if (this.kind == Kind.Number) return formatNumber(this.num);
    return "";
  }

  /** Text of a scalar entry, or `fallback` when absent or not a scalar. */
  getText(key: string, fallback: string = ""): string {
    const v = this.get(key);
    if (v === null) return fallback;
    if (v.kind == Kind.Object || v.kind == Kind.Array || v.kind == Kind.Null) return fallback;
    return v.text();
  }
}

export function formatNumber(n: f64): string {
  // Integral values print without the ".0" AssemblyScript's f64 toString adds.
  if (isFinite(n) && Math.abs(n) < 9007199254740992.0 && Math.floor(n) == n) {
    return (<i64>n).toString();
  }
  return n.toString();
}
