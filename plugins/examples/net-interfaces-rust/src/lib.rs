// net-interfaces, ported from plugins/net-interfaces/index.ts (AssemblyScript)
// to Rust on ABI v2: the same fixtures, the same verdicts, word for word.
// Are the network interfaces LNet uses operationally up? `unknown` passes:
// virtual and tunnel devices (and many VM NICs) never report carrier state,
// so treating it as down would fail healthy nodes; the message names them.
// Configuration (net-interfaces-rust.yaml):
//   ignoreInterfaces: [eth1]
use probegate_sdk::text::{clip, fields, human_list, int, is_valid_if_name, lines, one_line};
use probegate_sdk::{open_source, parse_error, Input, Manifest, Verdict};

const SOURCE: &str = "sys.net.operstate";
const FACT: &str = "lnet.interfaces";

fn manifest() -> Manifest {
    Manifest::new("net-interfaces-rust", "1.2.0", "network interfaces used by LNet are operationally up")
        .source(SOURCE)
        .strings_option("ignoreInterfaces", &[], "interfaces whose state is not checked, e.g. [eth1]")
}

fn check(input: &Input) -> Verdict {
    // An empty list from lnet-nets: LNet, configured at the first mount, names no interface yet.
    if input.fact(FACT).map_or(false, |l| l.bytes().all(|c| matches!(c, b',' | b' ' | b'\t' | b'\n' | b'\r'))) {
        return Verdict::pass("NoInterfacesNamed", String::from("LNet names no interface yet (lnet.interfaces is empty, lnetConfiguredAt: mount): none to check until it is configured"));
    }
    let o = match open_source(input, SOURCE) {
        Ok(o) => o,
        Err(v) => return v,
    };
    let ignore = input.config_strings("ignoreInterfaces", &[]);
    let mut ignored = Vec::new();
    let mut up = Vec::new();
    let mut unknown = Vec::new();
    let mut bad = Vec::new();
    for (n, line) in lines(o.text).enumerate() {
        let f: Vec<&str> = fields(line).collect();
        if f.is_empty() {
            continue;
        }
        if f.len() != 2 || !is_valid_if_name(f[0]) {
            let mut why = String::from("expected `IFACE STATE` on line ");
            why.push_str(&int(n as i64 + 1));
            why.push_str(": ");
            why.push_str(&clip(&one_line(line), 60));
            return parse_error(o.source, &why);
        }
        let (name, state) = (f[0], f[1]);
        if ignore.iter().any(|i| i == name) {
            ignored.push(String::from(name));
        } else if state == "up" {
            up.push(String::from(name));
        } else if state == "unknown" {
            unknown.push(String::from(name));
        } else {
            let mut b = String::from(name);
            b.push_str(" (");
            b.push_str(&clip(state, 20));
            b.push(')');
            bad.push(b);
        }
    }
    if up.len() + unknown.len() + bad.len() + ignored.len() == 0 {
        return parse_error(o.source, "no interfaces listed");
    }
    let note = if ignored.is_empty() { String::new() } else { String::from("; ignored by configuration: ") + &human_list(&ignored, 10) };
    if !bad.is_empty() {
        return Verdict::fail("InterfaceDown", String::from("interface(s) not up: ") + &human_list(&bad, 10) + &note);
    }
    if up.len() + unknown.len() == 0 {
        return Verdict::pass("InterfacesIgnored", String::from("every listed interface is ignored by configuration: ") + &human_list(&ignored, 10));
    }
    let all: Vec<String> = up.iter().chain(unknown.iter()).cloned().collect();
    let mut msg = String::from("interface(s) up: ") + &human_list(&all, 10);
    if !unknown.is_empty() {
        msg.push_str("; operstate unknown (counted as up): ");
        msg.push_str(&human_list(&unknown, 10));
    }
    msg.push_str(&note);
    Verdict::pass("InterfacesUp", msg)
}

probegate_sdk::export_plugin!(manifest, check);
