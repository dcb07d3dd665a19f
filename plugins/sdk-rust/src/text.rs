//! Text helpers with the same answers as the AssemblyScript SDK's, so a
//! check ported from it says the same thing (lengths are counted in UTF-16
//! units, as the host's limits and the other SDKs count them).
use alloc::string::String;
use alloc::vec::Vec;

/// Space, TAB, LF, CR, VT, FF: what separates fields.
pub fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The whitespace-separated fields of a line.
pub fn fields(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| c.is_ascii() && is_space(c as u8)).filter(|f| !f.is_empty())
}

/// Lines split on LF, each without a CR before it.
pub fn lines(s: &str) -> impl Iterator<Item = &str> {
    let body = s.strip_suffix('\n').unwrap_or(s);
    let empty = s.is_empty();
    body.split('\n').filter(move |_| !empty).map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// Why `s` is not usable as command text, or None: control characters other
/// than TAB/LF/CR, DEL or U+FFFD (bytes the host could not decode) mean
/// binary; nothing but blanks means empty.
pub fn text_problem(s: &str) -> Option<&'static str> {
    let binary = s.chars().any(|c| c == '\u{fffd}' || c == '\u{7f}' || ((c as u32) < 32 && !matches!(c, '\t' | '\n' | '\r')));
    if binary {
        return Some("contains binary data");
    }
    if s.bytes().all(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
        return Some("is empty");
    }
    None
}

/// Collapses control characters and whitespace runs so a message stays on one line.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending = false;
    for c in s.chars() {
        let blank = (c as u32) <= 32 || c == '\u{7f}';
        if blank {
            pending = true;
        } else {
            if pending && !out.is_empty() {
                out.push(' ');
            }
            pending = false;
            out.push(c);
        }
    }
    out
}

/// Length in UTF-16 units (how the host and the other SDKs count).
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// At most `max` UTF-16 units, never splitting a character; marks a cut with "…".
pub fn clip(s: &str, max: usize) -> String {
    if max < 1 {
        return String::new();
    }
    if utf16_len(s) <= max {
        return String::from(s);
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        if units + c.len_utf16() > max - 1 {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    // end is just past a character (char_indices): a boundary.
    let mut out = String::from(unsafe { s.get_unchecked(..end) });
    out.push('…');
    out
}

/// "a, b and c"; beyond `max` names, "a, b, … and 7 more".
pub fn human_list<S: AsRef<str>>(names: &[S], max: usize) -> String {
    let n = names.len();
    let mut out = String::new();
    if n == 0 {
        return out;
    }
    let shown = if n <= max { n - 1 } else { max };
    for (i, name) in names.iter().take(shown).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name.as_ref());
    }
    if n == 1 {
        out.push_str(names[0].as_ref());
    } else if n <= max {
        out.push_str(" and ");
        out.push_str(names[n - 1].as_ref());
    } else {
        out.push_str(" and ");
        crate::json::push_uint(&mut out, (n - max) as u64);
        out.push_str(" more");
    }
    out
}

/// The first non-blank line, trimmed, on one line and clipped to `max`; "" if none.
pub fn first_line(s: &str, max: usize) -> String {
    lines(s).map(str::trim).find(|l| !l.is_empty()).map(|l| clip(&one_line(l), max)).unwrap_or_default()
}

/// Linux interface names (dev_valid_name: 1–15 bytes, not "." or "..", no
/// '/', ':' or whitespace), additionally refusing control characters,
/// non-ASCII and ',' (`lnet.interfaces` is a comma-separated fact).
pub fn is_valid_if_name(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 15 || s == "." || s == ".." {
        return false;
    }
    b.iter().all(|&c| c > 32 && c != 0x7f && c != b'/' && c != b':' && c != b',' && c < 0x80)
}

/// Joins with a separator.
pub fn join<S: AsRef<str>>(parts: &[S], sep: &str) -> String {
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(p.as_ref());
    }
    out
}

/// `v.to_string()` without `core::fmt` (which would add kilobytes to a plugin).
pub fn int(v: i64) -> String {
    let mut s = String::new();
    crate::json::push_int(&mut s, v);
    s
}

/// Collects owned strings.
pub fn owned(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| String::from(*s)).collect()
}
