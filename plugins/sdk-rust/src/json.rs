//! A small JSON reader (into `Value`) and writer, enough for the check input,
//! the manifest and the verdict. Numbers are read without `core`'s float
//! parser (which would double a plugin's size); configuration values are
//! small integers and simple decimals, read exactly.
use alloc::string::String;
use alloc::vec::Vec;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Value>),
    /// Members in document order.
    Obj(Vec<(String, Value)>),
}

impl Value {
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Num(n) => Some(*n),
            _ => None,
        }
    }
    /// The number when it is whole and fits an i64.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Num(n) if *n == (*n as i64) as f64 => Some(*n as i64),
            _ => None,
        }
    }
}

const MAX_DEPTH: u32 = 64;

/// Parses one JSON document (trailing whitespace allowed), or says where it broke.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser { b: text.as_bytes(), i: 0 };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.b.len() {
        return Err(p.err("trailing characters after the document"));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, what: &str) -> String {
        let mut s = String::from("invalid JSON at byte ");
        push_uint(&mut s, self.i as u64);
        s.push_str(": ");
        s.push_str(what);
        s
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn lit(&mut self, word: &[u8], v: Value) -> Result<Value, String> {
        if self.b.get(self.i..).map_or(false, |rest| rest.starts_with(word)) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("unexpected word"))
        }
    }

    fn value(&mut self, depth: u32) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.ws();
        match self.b.get(self.i) {
            None => Err(self.err("unexpected end")),
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Value::Obj(members));
                }
                loop {
                    self.ws();
                    if self.b.get(self.i) != Some(&b'"') {
                        return Err(self.err("expected a member name"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return Err(self.err("expected ':'"));
                    }
                    self.i += 1;
                    let v = self.value(depth + 1)?;
                    members.push((k, v));
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Value::Obj(members));
                        }
                        _ => return Err(self.err("expected ',' or '}'")),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::Arr(items));
                        }
                        _ => return Err(self.err("expected ',' or ']'")),
                    }
                }
            }
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b't') => self.lit(b"true", Value::Bool(true)),
            Some(b'f') => self.lit(b"false", Value::Bool(false)),
            Some(b'n') => self.lit(b"null", Value::Null),
            Some(_) => self.number(),
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let neg = self.b.get(self.i) == Some(&b'-');
        if neg {
            self.i += 1;
        }
        let start = self.i;
        let mut v = 0f64;
        while let Some(c @ b'0'..=b'9') = self.b.get(self.i).copied() {
            v = v * 10.0 + (c - b'0') as f64;
            self.i += 1;
        }
        if self.i == start {
            return Err(self.err("unexpected character"));
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            let mut scale = 1f64;
            let mut frac = 0f64;
            while let Some(c @ b'0'..=b'9') = self.b.get(self.i).copied() {
                frac = frac * 10.0 + (c - b'0') as f64;
                scale *= 10.0;
                self.i += 1;
            }
            v += frac / scale;
        }
        if matches!(self.b.get(self.i), Some(b'e') | Some(b'E')) {
            self.i += 1;
            let eneg = match self.b.get(self.i) {
                Some(b'-') => {
                    self.i += 1;
                    true
                }
                Some(b'+') => {
                    self.i += 1;
                    false
                }
                _ => false,
            };
            let mut e = 0u32;
            while let Some(c @ b'0'..=b'9') = self.b.get(self.i).copied() {
                e = (e * 10 + (c - b'0') as u32).min(400);
                self.i += 1;
            }
            for _ in 0..e {
                if eneg {
                    v /= 10.0;
                } else {
                    v *= 10.0;
                }
            }
        }
        Ok(Value::Num(if neg { -v } else { v }))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut v = 0u32;
        for _ in 0..4 {
            let c = *self.b.get(self.i).ok_or_else(|| self.err("unexpected end in \\u escape"))?;
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(self.err("bad \\u escape")),
            };
            v = v * 16 + d as u32;
            self.i += 1;
        }
        Ok(v)
    }

    /// At a '"': the unescaped string. The input is a &str, so runs without
    /// escapes are copied as they are.
    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = String::new();
        let mut run = self.i;
        loop {
            let c = *self.b.get(self.i).ok_or_else(|| self.err("unterminated string"))?;
            match c {
                b'"' => {
                    out.push_str(self.slice(run, self.i));
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(self.slice(run, self.i));
                    self.i += 1;
                    let e = *self.b.get(self.i).ok_or_else(|| self.err("unterminated escape"))?;
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xd800..0xdc00).contains(&cp) && self.b.get(self.i..).map_or(false, |r| r.starts_with(b"\\u")) {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xdc00..0xe000).contains(&lo) {
                                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                } else {
                                    self.i = save;
                                }
                            }
                            // A lone surrogate has no UTF-8 form: it becomes U+FFFD.
                            out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                        }
                        _ => return Err(self.err("bad escape")),
                    }
                    run = self.i;
                }
                0..=0x1f => return Err(self.err("control character in string")),
                _ => self.i += 1,
            }
        }
    }

    fn slice(&self, from: usize, to: usize) -> &'a str {
        // Boundaries are ASCII ('"' or '\\'), so they fall between characters.
        unsafe { core::str::from_utf8_unchecked(&self.b[from..to]) }
    }
}

/// Appends `s` as a JSON string literal.
pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    let b = s.as_bytes();
    let mut run = 0;
    for (i, &c) in b.iter().enumerate() {
        let esc: &str = match c {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f | 0x7f => "",
            _ => continue,
        };
        out.push_str(unsafe { s.get_unchecked(run..i) }); // i is at an ASCII byte: a boundary
        if esc.is_empty() {
            out.push_str("\\u00");
            out.push(HEX[(c >> 4) as usize] as char);
            out.push(HEX[(c & 15) as usize] as char);
        } else {
            out.push_str(esc);
        }
        run = i + 1;
    }
    out.push_str(unsafe { s.get_unchecked(run..) });
    out.push('"');
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends an unsigned integer in decimal.
pub fn push_uint(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push_str(unsafe { core::str::from_utf8_unchecked(&buf[i..]) });
}

/// Appends a signed integer in decimal.
pub fn push_int(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_uint(out, v.unsigned_abs());
}

/// Builds one JSON object member by member.
pub struct ObjectWriter {
    buf: String,
}

impl Default for ObjectWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl ObjectWriter {
    pub fn new() -> Self {
        ObjectWriter { buf: String::from("{") }
    }
    fn key(&mut self, k: &str) {
        if self.buf.len() > 1 {
            self.buf.push(',');
        }
        push_string(&mut self.buf, k);
        self.buf.push(':');
    }
    pub fn string(mut self, k: &str, v: &str) -> Self {
        self.key(k);
        push_string(&mut self.buf, v);
        self
    }
    pub fn int(mut self, k: &str, v: i64) -> Self {
        self.key(k);
        push_int(&mut self.buf, v);
        self
    }
    pub fn bool(mut self, k: &str, v: bool) -> Self {
        self.key(k);
        self.buf.push_str(if v { "true" } else { "false" });
        self
    }
    pub fn strings<S: AsRef<str>>(mut self, k: &str, items: &[S]) -> Self {
        self.key(k);
        self.buf.push('[');
        for (i, s) in items.iter().enumerate() {
            if i > 0 {
                self.buf.push(',');
            }
            push_string(&mut self.buf, s.as_ref());
        }
        self.buf.push(']');
        self
    }
    /// A member whose value is already JSON text.
    pub fn raw(mut self, k: &str, json: &str) -> Self {
        self.key(k);
        self.buf.push_str(json);
        self
    }
    pub fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}
