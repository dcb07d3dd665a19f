// Hostile test plugin: check() throws, which AssemblyScript compiles to env.abort
export function manifest(): string {
  return '{"abi":1,"name":"abort","version":"1.0.0","description":"hostile test plugin","sources":[],"modes":["node","controller"]}';
}

export function check(input: string): string {
  throw new Error("boom from plugin");
}
