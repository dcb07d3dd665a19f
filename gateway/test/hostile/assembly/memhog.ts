// Hostile test plugin: check() allocates until memory.grow fails
export function manifest(): string {
  return '{"abi":1,"name":"memhog","version":"1.0.0","description":"hostile test plugin","sources":[],"modes":["node","controller"]}';
}

const keep = new Array<ArrayBuffer>();

export function check(input: string): string {
  for (let i = 0; i < 1_000_000; i++) keep.push(new ArrayBuffer(1 << 20));
  return "{}";
}
