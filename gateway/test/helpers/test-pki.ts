// Certificates for TLS tests, made by the openssl command-line tool (run by
// argv, no shell): a CA, and certificates it signs for a server (127.0.0.1)
// or a client (a CN). Files go in the directory given; nothing is shared
// between tests or worktrees.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export interface Pem {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"], timeout: 30_000 });
}

function pem(dir: string, name: string): Pem {
  const certFile = path.join(dir, `${name}.crt`);
  const keyFile = path.join(dir, `${name}.key`);
  return { certFile, keyFile, cert: fs.readFileSync(certFile, "utf8"), key: fs.readFileSync(keyFile, "utf8") };
}

/** A self-signed CA named `name`. */
export function makeCA(dir: string, name: string): Pem {
  openssl(
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", `/CN=${name}`,
      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
      "-keyout", `${name}.key`, "-out", `${name}.crt`],
    dir,
  );
  return pem(dir, name);
}

/** A leaf certificate signed by `ca`: for a server at 127.0.0.1 (san) or a client (no san). */
export function makeCert(dir: string, ca: Pem, name: string, opts: { cn: string; serverIP?: string }): Pem {
  openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", `/CN=${opts.cn}`, "-keyout", `${name}.key`, "-out", `${name}.csr`], dir);
  const ext = opts.serverIP
    ? `subjectAltName=IP:${opts.serverIP}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`
    : "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n";
  fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
  openssl(["x509", "-req", "-in", `${name}.csr`, "-CA", ca.certFile, "-CAkey", ca.keyFile, "-CAcreateserial", "-days", "2", "-extfile", `${name}.ext`, "-out", `${name}.crt`], dir);
  return pem(dir, name);
}
