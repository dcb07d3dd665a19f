// Hostile test plugin: claims an ABI version the gateway does not speak (v1 and v2 exist)
export function manifest(): string {
  return '{"abi":3,"name":"abi3","version":"1.0.0","sources":[],"modes":["node"]}';
}

export function check(input: string): string {
  return '{"status":"pass","reason":"Ok","message":"ok"}';
}
