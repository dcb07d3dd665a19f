// Hostile test plugin: manifest() is not JSON
export function manifest(): string {
  return "{abi: 1, name: oops";
}

export function check(input: string): string {
  return "{}";
}
