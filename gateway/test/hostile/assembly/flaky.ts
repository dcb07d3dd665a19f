// Test plugin: traps whenever the input carries the word "explode", passes otherwise.
// Used for quarantine: faults are driven from the test through source output.
export function manifest(): string {
  return '{"abi":1,"name":"flaky","version":"1.0.0","sources":["t.a"],"modes":["node","controller"]}';
}

export function check(input: string): string {
  if (input.includes("explode")) unreachable();
  return '{"status":"pass","reason":"Fine","message":"no explosion"}';
}
