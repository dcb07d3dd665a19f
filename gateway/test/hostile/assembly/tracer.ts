// Test plugin: uses the two benign host imports, env.trace and env.seed (via Math.random),
// and traces far more than the host lets through.
export function manifest(): string {
  return '{"abi":1,"name":"tracer","version":"1.0.0","sources":[],"modes":["node"]}';
}

export function check(input: string): string {
  for (let i = 0; i < 1000; i++) trace("tracing", 1, <f64>i);
  const r = Math.random();
  return '{"status":"pass","reason":"Traced","message":"random ' + r.toString() + '"}';
}
