// Hostile test plugin: manifest() never returns, so loading must time out
let spins: i64 = 0;

export function manifest(): string {
  while (spins >= 0) spins++;
  return "{}";
}

export function check(input: string): string {
  return "{}";
}
