//! The check input, typed (`plugins/ABI.md`: the same document for v1 and v2).
use alloc::string::String;
use alloc::vec::Vec;

use crate::json::{self, Value};

/// One source's output as the gateway read it.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub name: String,
    pub ok: bool,
    /// None for file sources and for commands that did not exit.
    pub exit_code: Option<i64>,
    pub stdout: String,
    pub stderr: String,
    /// The host's error text; empty when `ok`.
    pub error: String,
    pub truncated: bool,
    pub age_ms: i64,
}

#[derive(Debug, Clone, Default)]
pub struct Input {
    /// `node` or `controller`.
    pub mode: String,
    /// Only the sources the manifest lists, in the host's order.
    pub sources: Vec<Source>,
    pub facts: Vec<(String, String)>,
    /// Every declared key (the operator's file over the defaults); None for
    /// plugins that declare no configuration.
    pub config: Option<Value>,
}

fn take_str(v: Value) -> String {
    match v {
        Value::Str(s) => s,
        _ => String::new(),
    }
}

impl Input {
    pub fn parse(text: &str) -> Result<Input, String> {
        let root = json::parse(text)?;
        let members = match root {
            Value::Obj(m) => m,
            _ => return Err(String::from("input is not a JSON object")),
        };
        let mut input = Input::default();
        for (k, v) in members {
            match (k.as_str(), v) {
                ("mode", v) => input.mode = take_str(v),
                ("sources", Value::Obj(m)) => {
                    for (name, s) in m {
                        input.sources.push(Source::from_value(name, s));
                    }
                }
                ("facts", Value::Obj(m)) => {
                    for (name, f) in m {
                        input.facts.push((name, take_str(f)));
                    }
                }
                ("config", v @ Value::Obj(_)) => input.config = Some(v),
                _ => {}
            }
        }
        Ok(input)
    }

    pub fn source(&self, name: &str) -> Option<&Source> {
        self.sources.iter().find(|s| s.name == name)
    }

    pub fn fact(&self, name: &str) -> Option<&str> {
        self.facts.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn config_value(&self, key: &str) -> Option<&Value> {
        self.config.as_ref().and_then(|c| c.get(key))
    }

    /// A `string[]` key, or `fallback` when it is absent or not a list of strings.
    pub fn config_strings(&self, key: &str, fallback: &[&str]) -> Vec<String> {
        if let Some(Value::Arr(items)) = self.config_value(key) {
            if items.iter().all(|i| i.as_str().is_some()) {
                return items.iter().filter_map(|i| i.as_str().map(String::from)).collect();
            }
        }
        fallback.iter().map(|s| String::from(*s)).collect()
    }

    pub fn config_int(&self, key: &str, fallback: i64) -> i64 {
        self.config_value(key).and_then(Value::as_i64).unwrap_or(fallback)
    }

    pub fn config_number(&self, key: &str, fallback: f64) -> f64 {
        self.config_value(key).and_then(Value::as_f64).unwrap_or(fallback)
    }

    pub fn config_bool(&self, key: &str, fallback: bool) -> bool {
        self.config_value(key).and_then(Value::as_bool).unwrap_or(fallback)
    }

    pub fn config_string<'a>(&'a self, key: &str, fallback: &'a str) -> &'a str {
        self.config_value(key).and_then(Value::as_str).unwrap_or(fallback)
    }
}

impl Source {
    pub(crate) fn from_value(name: String, v: Value) -> Source {
        let mut s = Source { name, ..Source::default() };
        if let Value::Obj(m) = v {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("ok", Value::Bool(b)) => s.ok = b,
                    ("exitCode", v @ Value::Num(_)) => s.exit_code = v.as_i64(),
                    ("stdout", Value::Str(t)) => s.stdout = t,
                    ("stderr", Value::Str(t)) => s.stderr = t,
                    ("error", Value::Str(t)) => s.error = t,
                    ("truncated", Value::Bool(b)) => s.truncated = b,
                    ("ageMs", v @ Value::Num(_)) => s.age_ms = v.as_i64().unwrap_or(0),
                    _ => {}
                }
            }
        }
        s
    }
}
