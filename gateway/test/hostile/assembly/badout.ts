// Hostile test plugin: check() returns JSON that is not a verdict
export function manifest(): string {
  return '{"abi":1,"name":"badout","version":"1.0.0","description":"hostile test plugin","sources":[],"modes":["node","controller"]}';
}

export function check(input: string): string {
  return "{\"status\":\"maybe\"}";
}
