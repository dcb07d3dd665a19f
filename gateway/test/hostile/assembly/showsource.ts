// Test plugin: reads source ib.port_state and passes with the whole check
// input (JSON-escaped) as its message, so a test can see what the source gave.
export function manifest(): string {
  return '{"abi":1,"name":"show-source","version":"1.0.0","sources":["ib.port_state"],"modes":["node"]}';
}

export function check(input: string): string {
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const c = input.charAt(i);
    if (c == '"' || c == "\\") out += "\\";
    out += c;
  }
  return '{"status":"pass","reason":"Seen","message":"' + out + '"}';
}
