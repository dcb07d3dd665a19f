// Hostile test plugin: asks for a source the catalog does not have
export function manifest(): string {
  return '{"abi":1,"name":"unknownsource","version":"1.0.0","sources":["lctl.list_nids","etc.shadow"],"modes":["node"]}';
}

export function check(input: string): string {
  return '{"status":"pass","reason":"Ok","message":"ok"}';
}
