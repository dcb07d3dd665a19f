// Test plugin: reads proc.modules and traps while it carries the word "explode",
// passes otherwise. Drives quarantine and its recovery in a real gateway.
export function manifest(): string {
  return '{"abi":1,"name":"flaky-modules","version":"1.0.0","sources":["proc.modules"],"modes":["node"]}';
}

export function check(input: string): string {
  if (input.includes("explode")) unreachable();
  return '{"status":"pass","reason":"Fine","message":"no explosion"}';
}
