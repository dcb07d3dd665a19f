// {{name}}: TODO say what this check proves and why it matters.
use probegate_sdk::text::{int, lines};
use probegate_sdk::{log, open_source, parse_error, Input, Manifest, Verdict};

const SOURCE: &str = "{{source}}";
// TODO replace this rule: the source must print at least MIN_LINES non-empty lines.
const MIN_LINES: i64 = 2;

fn manifest() -> Manifest {
    Manifest::new("{{name}}", "0.1.0", "TODO one-line description").source(SOURCE)
}

// open_source() answers a missing or failed source and empty or binary output
// itself (SourceMissing, SourceFailed, ParseError).
fn check(input: &Input) -> Verdict {
    let o = match open_source(input, SOURCE) {
        Ok(o) => o,
        Err(v) => return v,
    };
    let count = lines(o.text).filter(|l| !l.trim().is_empty()).count() as i64;
    // Shown by `npm test` when a case fails, and in the gateway log at --log-level debug.
    log(&(String::from(SOURCE) + ": " + &int(count) + " non-empty line(s)"));
    if count == 0 {
        return parse_error(o.source, "no content");
    }
    if count < MIN_LINES {
        return Verdict::fail("TooFewLines", String::from(SOURCE) + " printed " + &int(count) + " line(s); need " + &int(MIN_LINES));
    }
    Verdict::pass("Ok", String::from(SOURCE) + " printed " + &int(count) + " line(s)")
}

probegate_sdk::export_plugin!(manifest, check);
