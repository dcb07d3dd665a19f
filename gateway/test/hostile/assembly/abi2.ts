// Hostile test plugin: speaks an ABI version the gateway does not
export function manifest(): string {
  return '{"abi":2,"name":"abi2","version":"1.0.0","sources":[],"modes":["node"]}';
}

export function check(input: string): string {
  return '{"status":"pass","reason":"Ok","message":"ok"}';
}
