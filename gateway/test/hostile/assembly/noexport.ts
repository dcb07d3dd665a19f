// Hostile test plugin: has no check export
export function manifest(): string {
  return '{"abi":1,"name":"noexport","version":"1.0.0","description":"hostile test plugin","sources":[],"modes":["node","controller"]}';
}

export function verify(input: string): string {
  return "{}";
}
