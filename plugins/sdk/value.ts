// One tree type serves both the JSON input decoder and the YAML-subset reader,
// so plugin code walks lnetctl documents and ABI input with the same calls.
// JSON values own their children; YAML values are views onto a YamlTree
// (node index into flat arrays), made on demand by get/at, with scalar text
// built only when read. Read scalars through text()/getText(), not `str`.

import { YamlTree } from "./yamltree";

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
  /** YAML view: the tree and node this value stands for. */
  tree: YamlTree | null = null;
  node: i32 = 0;
  /** YAML scalar whose `str` has not been built yet. */
  private lazy: bool = false;

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

  /** View of node `node` of a YAML tree. */
  static view(tree: YamlTree, node: i32): Value {
    const kind = tree.kind(node);
    const v = new Value(kind);
    v.tree = tree;
    v.node = node;
    v.line = tree.line(node);
    v.lazy = kind == Kind.String;
    return v;
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
    const tree = this.tree;
    if (tree !== null) return tree.length(this.node);
    const items = this.items;
    return items === null ? 0 : items.length;
  }

  /** Object lookup; the last duplicate wins, as with JSON.parse. */
  get(key: string): Value | null {
    const tree = this.tree;
    if (tree !== null) {
      const c = tree.find(this.node, key);
      return c < 0 ? null : Value.view(tree, c);
    }
    const keys = this.keys;
    const items = this.items;
    if (keys === null || items === null) return null;
    for (let i = keys.length - 1; i >= 0; i--) {
      if (keys[i] == key && i < items.length) return items[i];
    }
    return null;
  }

  has(key: string): bool {
    const tree = this.tree;
    if (tree !== null) return tree.find(this.node, key) >= 0;
    return this.get(key) !== null;
  }

  /** Item (array) or entry value (object) by position; null when out of range. */
  at(i: i32): Value | null {
    const tree = this.tree;
    if (tree !== null) {
      const c = tree.child(this.node, i);
      return c < 0 ? null : Value.view(tree, c);
    }
    const items = this.items;
    if (items === null || i < 0 || i >= items.length) return null;
    return items[i];
  }

  /** at(i).text() without making a view of the item (YAML); "" when out of range. */
  textAt(i: i32): string {
    const tree = this.tree;
    if (tree !== null) {
      const c = tree.child(this.node, i);
      return c < 0 ? "" : tree.text(c);
    }
    const v = this.at(i);
    return v === null ? "" : v.text();
  }

  keyAt(i: i32): string {
    const tree = this.tree;
    if (tree !== null) {
      if (this.kind != Kind.Object) return "";
      const c = tree.child(this.node, i);
      return c < 0 ? "" : tree.keyText(c);
    }
    const keys = this.keys;
    if (keys === null || i < 0 || i >= keys.length) return "";
    return keys[i];
  }

  /** Only for JSON-built (owning) containers; a no-op on YAML views. */
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
    if (this.kind == Kind.String) {
      if (this.lazy) {
        const tree = this.tree;
        if (tree !== null) this.str = tree.text(this.node);
        this.lazy = false;
      }
      return this.str;
    }
    if (this.kind == Kind.Bool) return this.num != 0 ? "true" : "false";
    if (this.kind == Kind.Number) return formatNumber(this.num);
    return "";
  }

  /** Text of a scalar entry, or `fallback` when absent or not a scalar. */
  getText(key: string, fallback: string = ""): string {
    const tree = this.tree;
    if (tree !== null) {
      const c = tree.find(this.node, key);
      // YAML scalars are only strings or nulls.
      return c >= 0 && tree.kind(c) == Kind.String ? tree.text(c) : fallback;
    }
    const v = this.get(key);
    if (v === null) return fallback;
    if (v.kind == Kind.Object || v.kind == Kind.Array || v.kind == Kind.Null) return fallback;
    return v.text();
  }
}

/**
 * Whether entry `key` of `obj` is a scalar whose text is `want`; compared in
 * place for YAML, so `status: up` on thousands of NIs costs no strings.
 */
export function textIs(obj: Value | null, key: string, want: string): bool {
  if (obj === null) return false;
  const tree = obj.tree;
  if (tree !== null) {
    const c = tree.find(obj.node, key);
    return c >= 0 && tree.textIs(c, want);
  }
  const v = obj.get(key);
  if (v === null || v.kind == Kind.Object || v.kind == Kind.Array || v.kind == Kind.Null) return false;
  return v.text() == want;
}

export function formatNumber(n: f64): string {
  // Integral values print without the ".0" AssemblyScript's f64 toString adds.
  if (isFinite(n) && Math.abs(n) < 9007199254740992.0 && Math.floor(n) == n) {
    return (<i64>n).toString();
  }
  return n.toString();
}
