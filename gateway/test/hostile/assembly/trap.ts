// Hostile test plugin: check() executes unreachable
export function manifest(): string {
  return '{"abi":1,"name":"trap","version":"1.0.0","description":"hostile test plugin","sources":[],"modes":["node","controller"]}';
}

export function check(input: string): string {
  unreachable();
  return "{}";
}
