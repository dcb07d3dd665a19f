//! Storage and volume health (`plugins/ABI.md`, "Health"): the round a check
//! runs in, and the `health` entries and `events` it reports.
//!
//! A health check exports itself with `export_health_plugin!(manifest, check)`
//! where `check(&Input, Round) -> Health`; plain checks keep `export_plugin!`
//! (and none of this code ends up in their module).
//!
//! ```ignore
//! use probegate_sdk::health::{Health, Round, STORAGE_DEGRADED};
//! fn check(input: &Input, round: Round) -> Health {
//!     Health::new(Verdict::warn("OstUnreachable", "…"))
//!         .entry(STORAGE_DEGRADED, "OstUnreachable", "lustrefs: OST0003 DISCONN for 95 s", Some("lustrefs"))
//!         .event("Evicted", Some("lustrefs"), Some("lustrefs-OST0003"), Some(round.epoch))
//! }
//! probegate_sdk::export_health_plugin!(manifest, check);
//! ```
use alloc::string::String;
use alloc::vec::Vec;

use crate::input::{Input, Source};
use crate::json::{self, ObjectWriter, Value};
use crate::text::{clip, one_line};
use crate::verdict::Verdict;

pub const STORAGE_DEGRADED: &str = "STORAGE_DEGRADED";
pub const STORAGE_UNREACHABLE: &str = "STORAGE_UNREACHABLE";
pub const VOLUME_DEGRADED: &str = "DEGRADED";
pub const VOLUME_INACCESSIBLE: &str = "INACCESSIBLE";
pub const VOLUME_DATA_LOSS: &str = "DATA_LOSS";
/// The host keeps at most this many entries and events.
pub const MAX_ENTRIES: usize = 256;
const OUTPUT_LIMIT: usize = 60 * 1024;
const ENTRY_MESSAGE_LIMIT: usize = 1024;

/// `round` of the input: when the host's round started and when the previous
/// round that ran this plugin did, in epoch seconds (0: unknown / first round).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    pub epoch: i64,
    pub previous_epoch: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HealthEntry {
    pub status: String,
    pub reason: String,
    pub message: String,
    pub fs: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HealthEvent {
    pub reason: String,
    pub fs: Option<String>,
    pub target: Option<String>,
    pub at: Option<i64>,
}

/// A verdict plus health entries (empty: nothing adverse known) and events.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    pub verdict: Verdict,
    pub entries: Vec<HealthEntry>,
    pub events: Vec<HealthEvent>,
    /// See [`Health::stable`].
    pub stable: bool,
}

impl Health {
    pub fn new(verdict: Verdict) -> Health {
        Health { verdict, entries: Vec::new(), events: Vec::new(), stable: false }
    }

    /// Adds an entry; the host keeps one per (status, reason), the first, so
    /// merge per pair before adding. Past MAX_ENTRIES entries are dropped.
    pub fn entry(mut self, status: &str, reason: &str, message: impl Into<String>, fs: Option<&str>) -> Health {
        if self.entries.len() < MAX_ENTRIES {
            self.entries.push(HealthEntry { status: String::from(status), reason: String::from(reason), message: message.into(), fs: fs.map(String::from) });
        }
        self
    }

    /// Adds an event (something seen happening since `round.previous_epoch`).
    pub fn event(mut self, reason: &str, fs: Option<&str>, target: Option<&str>, at: Option<i64>) -> Health {
        if self.events.len() < MAX_ENTRIES {
            self.events.push(HealthEvent { reason: String::from(reason), fs: fs.map(String::from), target: target.map(String::from), at });
        }
        self
    }

    /// Marks the verdict stable (storage and volume plugins, `plugins/ABI.md` "Health"):
    /// given the same sources, facts, configuration and module it would be the
    /// same at any later round and it carries no events, so the host may reuse
    /// it instead of calling again. Never when the verdict depends on time.
    pub fn stable(mut self) -> Health {
        self.stable = true;
        self
    }

    /// The verdict's JSON with `health` and `events`, within the output limit:
    /// entry messages are cut to 120 characters, then events dropped, before
    /// the verdict is touched.
    pub fn to_json(&self) -> String {
        for (limit, with_events) in [(ENTRY_MESSAGE_LIMIT, true), (120, true), (120, false)] {
            let out = self.render(limit, with_events);
            if out.len() <= OUTPUT_LIMIT {
                return out;
            }
        }
        self.verdict.to_json()
    }

    fn render(&self, limit: usize, with_events: bool) -> String {
        let mut out = self.verdict.to_json();
        out.pop(); // the closing brace
        if !self.entries.is_empty() {
            out.push_str(",\"health\":[");
            for (i, e) in self.entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let mut w = ObjectWriter::new().string("status", &e.status).string("reason", &clip(&e.reason, 64)).string("message", &clip(&one_line(&e.message), limit));
                if let Some(fs) = &e.fs {
                    w = w.string("fs", fs);
                }
                out.push_str(&w.finish());
            }
            out.push(']');
        }
        if with_events && !self.events.is_empty() {
            out.push_str(",\"events\":[");
            for (i, e) in self.events.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let mut w = ObjectWriter::new().string("reason", &clip(&e.reason, 64));
                if let Some(fs) = &e.fs {
                    w = w.string("fs", &clip(fs, 128));
                }
                if let Some(t) = &e.target {
                    w = w.string("target", &clip(t, 128));
                }
                if let Some(at) = e.at {
                    w = w.int("at", at);
                }
                out.push_str(&w.finish());
            }
            out.push(']');
        }
        if self.stable {
            out.push_str(",\"stable\":true");
        }
        out.push('}');
        out
    }
}

fn epoch_of(v: Option<&Value>) -> i64 {
    match v.and_then(Value::as_f64) {
        Some(n) if n.is_finite() && n >= 0.0 && n <= 9_007_199_254_740_991.0 => n as i64,
        _ => 0,
    }
}

/// The input and its round from one parse of the document.
pub fn parse_input(text: &str) -> Result<(Input, Round), String> {
    let root = json::parse(text)?;
    let members = match root {
        Value::Obj(m) => m,
        _ => return Err(String::from("input is not a JSON object")),
    };
    let mut input = Input::default();
    let mut round = Round::default();
    for (k, v) in members {
        match (k.as_str(), v) {
            ("mode", Value::Str(s)) => input.mode = s,
            ("sources", Value::Obj(m)) => {
                for (name, s) in m {
                    input.sources.push(Source::from_value(name, s));
                }
            }
            ("facts", Value::Obj(m)) => {
                for (name, f) in m {
                    if let Value::Str(s) = f {
                        input.facts.push((name, s));
                    } else {
                        input.facts.push((name, String::new()));
                    }
                }
            }
            ("config", v @ Value::Obj(_)) => input.config = Some(v),
            ("round", r @ Value::Obj(_)) => {
                round.epoch = epoch_of(r.get("epoch"));
                round.previous_epoch = epoch_of(r.get("previousEpoch"));
            }
            _ => {}
        }
    }
    Ok((input, round))
}

/// `pg_check` of a health plugin: decodes the input and its round, runs `check`, serialises.
pub fn run_check(ptr: *const u8, len: usize, check: fn(&Input, Round) -> Health) -> u64 {
    let bytes = unsafe { core::slice::from_raw_parts(ptr, len) };
    let health = match core::str::from_utf8(bytes) {
        Err(_) => Health::new(Verdict::fail("BadInput", "input is not UTF-8")),
        Ok(text) => match parse_input(text) {
            Ok((input, round)) => check(&input, round),
            Err(e) => Health::new(Verdict::fail("BadInput", e)),
        },
    };
    crate::abi::emit(health.to_json())
}
