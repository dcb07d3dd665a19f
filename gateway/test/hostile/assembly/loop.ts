// Hostile test plugin: check() never returns
export function manifest(): string {
  return '{"abi":1,"name":"loop","version":"1.0.0","description":"hostile test plugin","sources":[],"modes":["node","controller"]}';
}

let spins: i64 = 0;

export function check(input: string): string {
  while (spins >= 0) spins++;
  return "{}";
}
