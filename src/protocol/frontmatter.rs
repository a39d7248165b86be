//! The YAML frontmatter of a skill's `SKILL.md` (the Skills extension, SEP-2640), read into
//! JSON so it can be compared with the frontmatter the server's skill entry carries.
//!
//! Frontmatter is a small YAML mapping, so this reads the part of YAML it uses: nested block
//! mappings and sequences, plain, quoted and block (`|`, `>`) scalars, flow sequences of
//! scalars, comments, and plain scalars typed as YAML's core schema does (null, booleans,
//! numbers, else text). Anything else (anchors, aliases, tags, flow mappings, multi-document
//! text) is refused rather than guessed at: the caller treats a frontmatter it cannot read as
//! one that does not match.

use serde_json::{Map, Number, Value};

/// The frontmatter of `text` (a whole `SKILL.md`) as a JSON object, or why it cannot be read.
pub fn parse(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("the file does not begin with a `---` frontmatter line".into());
    }
    let mut body = Vec::new();
    loop {
        match lines.next() {
            None => return Err("the frontmatter has no closing `---` line".into()),
            Some(line) if matches!(line.trim_end(), "---" | "...") => break,
            Some(line) => body.push(line),
        }
    }
    let lines: Vec<Line> = body.iter().filter_map(|l| Line::of(l)).collect();
    if lines.is_empty() {
        return Err("the frontmatter is empty".into());
    }
    let mut reader = Reader {
        lines,
        at: 0,
        depth: 0,
    };
    let indent = reader.lines[0].indent;
    match reader.block(indent)? {
        Value::Object(map) if reader.at == reader.lines.len() => Ok(map),
        Value::Object(_) => Err(format!(
            "unexpected indentation at `{}`",
            reader.lines[reader.at].text
        )),
        _ => Err("the frontmatter is not a mapping".into()),
    }
}

/// One line that carries content: its indentation and its text without it. `raw` keeps the
/// whole line for block scalars, whose spacing is content.
struct Line<'a> {
    indent: usize,
    text: &'a str,
    raw: &'a str,
}

impl<'a> Line<'a> {
    /// Blank and comment-only lines carry nothing (except inside block scalars, which read
    /// `raw`; a blank line there is kept by `Reader::block_scalar`).
    fn of(raw: &'a str) -> Option<Line<'a>> {
        let text = raw.trim_start_matches(' ');
        let trimmed = text.trim_end();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            // Kept as an empty line so block scalars see their blank lines.
            return Some(Line {
                indent: usize::MAX,
                text: "",
                raw,
            });
        }
        Some(Line {
            indent: raw.len() - text.len(),
            text: trimmed,
            raw,
        })
    }

    fn is_blank(&self) -> bool {
        self.indent == usize::MAX
    }

    fn is_item(&self) -> bool {
        self.text == "-" || self.text.starts_with("- ")
    }
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
    /// How many blocks enclose the one being read: bounded, since each level is a call and
    /// the text is the server's.
    depth: usize,
}

/// Deeper frontmatter than any skill needs is refused rather than read with unbounded
/// recursion.
const MAX_DEPTH: usize = 32;

impl<'a> Reader<'a> {
    fn skip_blank(&mut self) {
        while self.at < self.lines.len() && self.lines[self.at].is_blank() {
            self.at += 1;
        }
    }

    /// The indentation of the next content line, if any.
    fn next_indent(&mut self) -> Option<usize> {
        self.skip_blank();
        self.lines.get(self.at).map(|l| l.indent)
    }

    /// The block (mapping or sequence) whose lines start at `indent`.
    fn block(&mut self, indent: usize) -> Result<Value, String> {
        if self.depth == MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} levels deep"));
        }
        self.depth += 1;
        self.skip_blank();
        let value = match self.lines.get(self.at) {
            Some(line) if line.is_item() => self.sequence(indent),
            Some(_) => self.mapping(indent),
            None => Ok(Value::Null),
        };
        self.depth -= 1;
        value
    }

    fn mapping(&mut self, indent: usize) -> Result<Value, String> {
        let mut map = Map::new();
        while let Some(at) = self.next_indent() {
            if at < indent {
                break;
            }
            let line = &self.lines[self.at];
            if at > indent || line.is_item() {
                return Err(format!("unexpected indentation at `{}`", line.text));
            }
            let (key, rest) = split_key(line.text)?;
            self.at += 1;
            let value = self.value_of(indent, rest, true)?;
            if map.insert(key.clone(), value).is_some() {
                return Err(format!("the key `{key}` appears twice"));
            }
        }
        Ok(Value::Object(map))
    }

    fn sequence(&mut self, indent: usize) -> Result<Value, String> {
        let mut items = Vec::new();
        while let Some(at) = self.next_indent() {
            let line = &self.lines[self.at];
            if at < indent || (at == indent && !line.is_item()) {
                break;
            }
            if at > indent {
                return Err(format!("unexpected indentation at `{}`", line.text));
            }
            let rest = line.text[1..].trim_start();
            if split_key(rest).is_ok() && !rest.starts_with(['"', '\'', '[']) {
                return Err(format!("mappings inside a sequence are not read: `{rest}`"));
            }
            self.at += 1;
            items.push(self.value_of(indent, rest, false)?);
        }
        Ok(Value::Array(items))
    }

    /// The value after a key or an item marker at `indent`: `rest` when it is written on the
    /// same line, else the nested block below. A mapping's value may be a sequence at the
    /// key's own indentation.
    fn value_of(&mut self, indent: usize, rest: &str, in_mapping: bool) -> Result<Value, String> {
        if let Some(style) = rest.strip_prefix(['|', '>']) {
            let folded = rest.starts_with('>');
            return self.block_scalar(indent, folded, style);
        }
        if !rest.is_empty() {
            let mut text = rest.to_owned();
            // A plain scalar may go on over more-indented lines, folded with spaces.
            if !rest.starts_with(['"', '\'', '[']) {
                while self.next_indent().is_some_and(|at| at > indent) {
                    text.push(' ');
                    text.push_str(self.lines[self.at].text);
                    self.at += 1;
                }
            }
            return scalar(&text);
        }
        match self.next_indent() {
            Some(at) if at > indent => self.block(at),
            Some(at) if at == indent && in_mapping && self.lines[self.at].is_item() => {
                self.sequence(at)
            }
            _ => Ok(Value::Null),
        }
    }

    /// A `|` (literal) or `>` (folded) scalar: the more-indented lines below, with the final
    /// line break kept (`clip`), dropped (`-`) or every trailing one kept (`+`).
    fn block_scalar(&mut self, indent: usize, folded: bool, style: &str) -> Result<Value, String> {
        let chomp = match style.trim() {
            "" => Chomp::Clip,
            "-" => Chomp::Strip,
            "+" => Chomp::Keep,
            other => return Err(format!("block scalar style `{other}` is not read")),
        };
        let mut lines: Vec<&str> = Vec::new();
        let mut body_indent = None;
        while let Some(line) = self.lines.get(self.at) {
            if line.is_blank() {
                lines.push("");
                self.at += 1;
                continue;
            }
            if line.indent <= indent {
                break;
            }
            let at = *body_indent.get_or_insert(line.indent);
            if line.indent < at {
                return Err(format!("unexpected indentation at `{}`", line.text));
            }
            lines.push(line.raw[at..].trim_end());
            self.at += 1;
        }
        let trailing = lines.iter().rev().take_while(|l| l.is_empty()).count();
        let content = &lines[..lines.len() - trailing];
        let mut text = String::new();
        for (i, line) in content.iter().enumerate() {
            if i > 0 {
                let more_indented = line.starts_with(' ') || content[i - 1].starts_with(' ');
                let joined_by_space =
                    folded && !line.is_empty() && !content[i - 1].is_empty() && !more_indented;
                text.push(if joined_by_space { ' ' } else { '\n' });
            }
            text.push_str(line);
        }
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip if !content.is_empty() => text.push('\n'),
            Chomp::Clip => {}
            Chomp::Keep => text.push_str(&"\n".repeat(trailing + 1)),
        }
        Ok(Value::String(text))
    }
}

enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// `key: rest` (rest may be empty), the key plain or quoted.
fn split_key(text: &str) -> Result<(String, &str), String> {
    let (key, after) = if text.starts_with(['"', '\'']) {
        let (key, used) = quoted(text)?;
        (key, &text[used..])
    } else {
        let end = text
            .match_indices(':')
            .map(|(i, _)| i)
            .find(|&i| text[i + 1..].is_empty() || text[i + 1..].starts_with(' '))
            .ok_or_else(|| format!("expected `key: value`, found `{text}`"))?;
        (text[..end].trim_end().to_owned(), &text[end..])
    };
    let rest = after
        .strip_prefix(':')
        .ok_or_else(|| format!("expected `:` after the key in `{text}`"))?;
    if key.is_empty() || key.starts_with(['&', '*', '!', '?', '{', '[']) {
        return Err(format!("the key in `{text}` is not read"));
    }
    Ok((key, strip_comment(rest).trim()))
}

/// `text` up to a ` #` comment (outside quotes).
fn strip_comment(text: &str) -> &str {
    let mut quote = None;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'#') if i == 0 || bytes[i - 1] == b' ' => return &text[..i],
            _ => {}
        }
    }
    text
}

/// One scalar (or flow sequence of scalars) written on a line.
fn scalar(text: &str) -> Result<Value, String> {
    let text = strip_comment(text).trim();
    if text.starts_with(['"', '\'']) {
        let (value, used) = quoted(text)?;
        if !text[used..].trim().is_empty() {
            return Err(format!("text after a quoted scalar: `{text}`"));
        }
        return Ok(Value::String(value));
    }
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| format!("an unclosed flow sequence: `{text}`"))?;
        return flow_items(inner).map(Value::Array);
    }
    if text.starts_with(['&', '*', '!', '{', '%', '@', '`', '|', '>']) {
        return Err(format!(
            "`{text}` is not read (anchors, aliases, tags, flow mappings)"
        ));
    }
    Ok(plain(text))
}

/// The items of a flow sequence (`a, "b", 3`), scalars only.
fn flow_items(inner: &str) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (item, after) = if rest.starts_with(['"', '\'']) {
            let (value, used) = quoted(rest)?;
            (Value::String(value), rest[used..].trim_start())
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let item = rest[..end].trim();
            if item.starts_with(['[', '{', '&', '*', '!']) {
                return Err(format!("nested flow items are not read: `{inner}`"));
            }
            (plain(item), &rest[end..])
        };
        items.push(item);
        rest = match after.strip_prefix(',') {
            Some(more) => more.trim_start(),
            None if after.is_empty() => after,
            None => return Err(format!("expected `,` in the flow sequence `{inner}`")),
        };
    }
    Ok(items)
}

/// A quoted scalar at the start of `text`: its value and the bytes it took.
fn quoted(text: &str) -> Result<(String, usize), String> {
    let quote = text.as_bytes()[0];
    let mut value = String::new();
    let mut chars = text.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' if quote == b'\'' => {
                if chars.peek().is_some_and(|&(_, next)| next == '\'') {
                    chars.next();
                    value.push('\'');
                } else {
                    return Ok((value, i + 1));
                }
            }
            '"' if quote == b'"' => return Ok((value, i + 1)),
            '\\' if quote == b'"' => {
                let (_, escaped) = chars.next().ok_or("an unfinished escape")?;
                value.push(match escaped {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    '"' | '\\' | '/' | ' ' => escaped,
                    'u' => {
                        let hex: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("a bad escape \\u{hex}"))?
                    }
                    other => return Err(format!("the escape \\{other} is not read")),
                });
            }
            c => value.push(c),
        }
    }
    Err(format!("an unclosed quoted scalar: `{text}`"))
}

/// A plain scalar typed as YAML's core schema types it.
fn plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = text.trim_start_matches('+').parse::<i64>() {
            return Value::Number(n.into());
        }
    }
    let looks_numeric = digits.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    if looks_numeric {
        if let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
            return Value::Number(n);
        }
    }
    Value::String(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Value {
        Value::Object(parse(text).unwrap())
    }

    #[test]
    fn reads_the_frontmatter_skills_use() {
        let text = "---\nname: pdf-processing\ndescription: Extract, fill: and assemble # a comment\n\
            license: 'Apache-2.0'\nmetadata:\n  version: \"2.1.0\"\n  stars: 12\n  beta: true\n\
            allowed-tools: [Read, \"Bash(git:*)\"]\nsteps:\n  - one\n  - 2\nnotes: |\n  line one\n\n  line two\n\
            folded: >-\n  a\n  b\n---\n\nBody.\n";
        assert_eq!(
            read(text),
            json!({
                "name": "pdf-processing",
                "description": "Extract, fill: and assemble",
                "license": "Apache-2.0",
                "metadata": {"version": "2.1.0", "stars": 12, "beta": true},
                "allowed-tools": ["Read", "Bash(git:*)"],
                "steps": ["one", 2],
                "notes": "line one\n\nline two\n",
                "folded": "a b",
            })
        );
    }

    #[test]
    fn a_sequence_may_sit_at_its_keys_indentation() {
        let text = "---\nname: x\ntags:\n- a\n- b\nafter: 1.5\n---\n";
        assert_eq!(
            read(text),
            json!({"name": "x", "tags": ["a", "b"], "after": 1.5})
        );
    }

    #[test]
    fn refuses_what_it_does_not_read() {
        for bad in [
            "no frontmatter",
            "---\nname: x\n",
            "---\n---\n",
            "---\nname: &a x\n---\n",
            "---\nname: x\nname: y\n---\n",
            "---\nname: {a: b}\n---\n",
            "---\nname: \"open\n---\n",
            "---\n- a\n---\n",
            "---\nmetadata:\n    a: 1\n  b: 2\n---\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was read");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_recursed_into() {
        let mut text = String::from("---\n");
        for level in 0..1000 {
            text.push_str(&format!("{}k:\n", " ".repeat(level)));
        }
        text.push_str("---\n");
        let error = parse(&text).unwrap_err();
        assert!(error.contains("levels deep"), "{error}");
    }

    #[test]
    fn arbitrary_text_never_panics() {
        // A fixed pseudo-random walk over YAML's punctuation, so a failure reproduces.
        const ALPHABET: &[u8] = b"-:#'\" \n\n[]|>+ab1.,\\u&{}";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut text = String::from("---\n");
            for _ in 0..40 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push(ALPHABET[(state % ALPHABET.len() as u64) as usize] as char);
            }
            text.push_str("\n---\n");
            let _ = parse(&text);
        }
    }
}
