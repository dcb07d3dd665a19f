// Hostile test plugin: check() builds a 100 MB string (50 Mi UTF-16 code units)
export function manifest(): string {
  return '{"abi":1,"name":"hugestring","version":"1.0.0","description":"hostile test plugin","sources":[],"modes":["node","controller"]}';
}

export function check(input: string): string {
  const s = "x".repeat(50 * 1024 * 1024);
  return '{"status":"pass","reason":"Built","message":"' + s.length.toString() + '"}';
}
