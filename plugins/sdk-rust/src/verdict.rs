//! Verdicts (the `condition` a check reports) and the SDK's own reasons.
use alloc::string::String;
use alloc::vec::Vec;

use crate::input::{Input, Source};
use crate::json::ObjectWriter;
use crate::text::{clip, first_line, one_line};

// The AssemblyScript SDK's limits: a verdict stays well under the host's 2 MiB.
const OUTPUT_LIMIT: usize = 60 * 1024;
const MESSAGE_LIMIT: usize = 4000;
const REASON_LIMIT: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pass,
    Warn,
    Fail,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// What a check says: status, an UpperCamelCase reason (≤ 64 characters),
/// a message for people, and facts for later checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub status: Status,
    pub reason: String,
    pub message: String,
    pub facts: Vec<(String, String)>,
}

impl Verdict {
    pub fn new(status: Status, reason: &str, message: impl Into<String>) -> Verdict {
        Verdict { status, reason: String::from(reason), message: message.into(), facts: Vec::new() }
    }
    pub fn pass(reason: &str, message: impl Into<String>) -> Verdict {
        Verdict::new(Status::Pass, reason, message)
    }
    pub fn warn(reason: &str, message: impl Into<String>) -> Verdict {
        Verdict::new(Status::Warn, reason, message)
    }
    pub fn fail(reason: &str, message: impl Into<String>) -> Verdict {
        Verdict::new(Status::Fail, reason, message)
    }

    /// Adds (or replaces) a fact; facts are reported whatever the status.
    pub fn fact(mut self, key: &str, value: impl Into<String>) -> Verdict {
        let value = value.into();
        match self.facts.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.facts.push((String::from(key), value)),
        }
        self
    }

    /// Serialises within the ABI's limits: facts are dropped before the verdict is.
    pub fn to_json(&self) -> String {
        let full = self.render(MESSAGE_LIMIT, true);
        if full.len() <= OUTPUT_LIMIT {
            return full;
        }
        self.render(500, false)
    }

    fn render(&self, message_limit: usize, with_facts: bool) -> String {
        let mut w = ObjectWriter::new()
            .string("status", self.status.as_str())
            .string("reason", &clip(&self.reason, REASON_LIMIT))
            .string("message", &clip(&self.message, message_limit));
        if with_facts && !self.facts.is_empty() {
            let mut f = ObjectWriter::new();
            for (k, v) in &self.facts {
                f = f.string(k, v);
            }
            w = w.raw("facts", &f.finish());
        }
        w.finish()
    }
}

/// A source that is present, succeeded and printed usable text.
pub struct Opened<'a> {
    pub input: &'a Input,
    pub source: &'a Source,
    pub text: &'a str,
}

/// The common opening of a check: find source `name`, and answer a missing
/// or failed source and empty or binary output with the SDK's reasons
/// (`SourceMissing`, `SourceFailed`, `ParseError`).
pub fn open_source<'a>(input: &'a Input, name: &str) -> Result<Opened<'a>, Verdict> {
    let source = match input.source(name) {
        Some(s) => s,
        None => {
            let mut m = String::from("source ");
            m.push_str(name);
            m.push_str(" was not provided to the check");
            return Err(Verdict::fail("SourceMissing", m));
        }
    };
    if !source.ok {
        return Err(source_failed(source));
    }
    if let Some(problem) = crate::text::text_problem(&source.stdout) {
        let mut why = String::from("output ");
        why.push_str(problem);
        return Err(parse_error(source, &why));
    }
    Ok(Opened { input, source, text: &source.stdout })
}

/// `SourceFailed`, quoting the host's error and the first line of stderr.
pub fn source_failed(src: &Source) -> Verdict {
    let mut m = String::from("source ");
    m.push_str(&src.name);
    m.push_str(" failed: ");
    if src.error.is_empty() {
        m.push_str("unknown error");
    } else {
        m.push_str(&one_line(&src.error));
    }
    let detail = first_line(&src.stderr, 200);
    if !detail.is_empty() {
        m.push_str(" (");
        m.push_str(&detail);
        m.push(')');
    }
    Verdict::fail("SourceFailed", m)
}

/// `ParseError` naming the source; notes truncation, since it usually explains the damage.
pub fn parse_error(src: &Source, why: &str) -> Verdict {
    let mut m = String::from("cannot parse ");
    m.push_str(&src.name);
    m.push_str(": ");
    m.push_str(why);
    if src.truncated {
        m.push_str(" (output was truncated by the host)");
    }
    Verdict::fail("ParseError", m)
}
