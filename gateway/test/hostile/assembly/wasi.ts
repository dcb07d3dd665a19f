// Hostile test plugin: imports a WASI function
export function manifest(): string {
  return '{"abi":1,"name":"wasi","version":"1.0.0","description":"hostile test plugin","sources":[],"modes":["node","controller"]}';
}

@external("wasi_snapshot_preview1", "proc_exit")
declare function proc_exit(code: i32): void;

export function check(input: string): string {
  proc_exit(1);
  return "{}";
}
