//! The manifest builder (`pg_manifest` returns its JSON).
use alloc::string::String;
use alloc::vec::Vec;

use crate::json::{push_string, ObjectWriter};

pub struct Manifest {
    name: String,
    version: String,
    description: String,
    sources: Vec<String>,
    modes: Vec<&'static str>,
    probe: &'static str,
    severity: &'static str,
    /// Rendered `"key":{…}` members of `config`.
    options: Vec<String>,
}

impl Manifest {
    /// Defaults as the host applies them: modes `[node]`, probe `readiness`, severity `required`.
    pub fn new(name: &str, version: &str, description: &str) -> Manifest {
        Manifest {
            name: String::from(name),
            version: String::from(version),
            description: String::from(description),
            sources: Vec::new(),
            modes: alloc::vec!["node"],
            probe: "readiness",
            severity: "required",
            options: Vec::new(),
        }
    }

    pub fn source(mut self, name: &str) -> Manifest {
        self.sources.push(String::from(name));
        self
    }

    /// Replaces the default `[node]`; call once per mode (`node`, `controller`).
    pub fn mode(mut self, mode: &'static str) -> Manifest {
        if self.modes == ["node"] && mode != "node" {
            self.modes = alloc::vec![mode];
        } else if !self.modes.contains(&mode) {
            self.modes.push(mode);
        }
        self
    }

    /// `readiness` (default), `liveness` or `volume`.
    pub fn probe(mut self, kind: &'static str) -> Manifest {
        self.probe = kind;
        self
    }

    pub fn advisory(mut self) -> Manifest {
        self.severity = "advisory";
        self
    }

    /// A list option (NAME.yaml `key: [a, b]`); read it with `Input::config_strings`.
    pub fn strings_option(self, key: &str, defaults: &[&str], description: &str) -> Manifest {
        let w = ObjectWriter::new().strings("default", defaults);
        self.option(key, "string[]", w, description)
    }

    /// A whole-number option of at least `min`; read it with `Input::config_int`.
    pub fn int_option(self, key: &str, default: i64, min: i64, description: &str) -> Manifest {
        let w = ObjectWriter::new().int("default", default).int("min", min);
        self.option(key, "integer", w, description)
    }

    /// A true/false option; read it with `Input::config_bool`.
    pub fn bool_option(self, key: &str, default: bool, description: &str) -> Manifest {
        let w = ObjectWriter::new().bool("default", default);
        self.option(key, "boolean", w, description)
    }

    /// A text option; read it with `Input::config_string`.
    pub fn string_option(self, key: &str, default: &str, description: &str) -> Manifest {
        let w = ObjectWriter::new().string("default", default);
        self.option(key, "string", w, description)
    }

    fn option(mut self, key: &str, ty: &str, w: ObjectWriter, description: &str) -> Manifest {
        let mut member = String::new();
        push_string(&mut member, key);
        member.push(':');
        member.push_str(&w.string("type", ty).string("description", description).finish());
        self.options.push(member);
        self
    }

    pub fn to_json(&self) -> String {
        let mut w = ObjectWriter::new()
            .int("abi", crate::ABI_VERSION as i64)
            .string("name", &self.name)
            .string("version", &self.version)
            .string("description", &self.description)
            .strings("sources", &self.sources)
            .strings("modes", &self.modes)
            .string("probe", self.probe)
            .string("severity", self.severity);
        if !self.options.is_empty() {
            let mut c = String::from("{");
            c.push_str(&crate::text::join(&self.options, ","));
            c.push('}');
            w = w.raw("config", &c);
        }
        w.finish()
    }
}
