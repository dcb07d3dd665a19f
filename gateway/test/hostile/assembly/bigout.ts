// Hostile test plugin: check() returns a 50 MB string
export function manifest(): string {
  return '{"abi":1,"name":"bigout","version":"1.0.0","description":"hostile test plugin","sources":[],"modes":["node","controller"]}';
}

export function check(input: string): string {
  // 25 Mi UTF-16 code units = 50 MiB in plugin memory.
  return "x".repeat(25 * 1024 * 1024);
}
