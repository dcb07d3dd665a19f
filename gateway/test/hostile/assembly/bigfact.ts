// Test plugin: passes with one fact of 1 Mi + 1 characters, one past FACT_VALUE_MAX_CHARS
export function manifest(): string {
  return '{"abi":1,"name":"bigfact","version":"1.0.0","description":"oversized fact","sources":[],"modes":["node","controller"]}';
}

export function check(input: string): string {
  return '{"status":"pass","reason":"Big","message":"m","facts":{"big.fact":"' + "y".repeat(1024 * 1024 + 1) + '"}}';
}
