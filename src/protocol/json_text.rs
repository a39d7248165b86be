//! Writing a `serde_json::Value` as compact JSON text, fast.
//!
//! The output is byte-identical to `serde_json::to_string`. The difference is in strings:
//! serde_json looks every byte up in an escape table, while here runs of bytes that need no
//! escape are found a 64-bit word (8 bytes) at a time and copied with one `push_str`. On the per-call path
//! (a request's params, a result handed to C) most of the text is such runs.
//!
//! The writer appends to a `String` rather than a `Vec<u8>`: every piece written is UTF-8
//! (runs end at ASCII bytes, so they are whole characters), and keeping it in the type means
//! no validation pass afterwards and no unsafe code.

use serde_json::{Number, Value};
use std::fmt::Write;

/// `value` as compact JSON text, exactly as `serde_json::to_string(value)` writes it.
pub fn to_string(value: &Value) -> String {
    // One byte spare: callers append a NUL (CString) or a newline (stdio) without regrowth.
    let mut out = String::with_capacity(estimated_len(value) + 1);
    write_value(&mut out, value);
    out
}

/// Appends `value` as compact JSON text.
pub fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Appends `s` as a JSON string literal, quotes included.
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(at) = find_escape(bytes, start) {
        // `at` holds an ASCII byte, so both slice ends are character boundaries.
        out.push_str(&s[start..at]);
        push_escape(out, bytes[at]);
        start = at + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The length of `value`'s text when no string in it needs an escape (then it is exact for
/// every value without floats), so the buffer is allocated once.
pub fn estimated_len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number_len(n),
        Value::String(s) => s.len() + 2,
        // Brackets, plus one comma between items.
        Value::Array(items) => {
            2 + items.len().saturating_sub(1) + items.iter().map(estimated_len).sum::<usize>()
        }
        // Braces, commas, and per entry a quoted key and a colon.
        Value::Object(map) => {
            2 + map.len().saturating_sub(1)
                + map
                    .iter()
                    .map(|(k, v)| k.len() + 3 + estimated_len(v))
                    .sum::<usize>()
        }
    }
}

fn number_len(n: &Number) -> usize {
    if let Some(u) = n.as_u64() {
        decimal_digits(u)
    } else if let Some(i) = n.as_i64() {
        // Only negative integers get here.
        1 + decimal_digits(i.unsigned_abs())
    } else {
        // The longest shortest-round-trip f64, e.g. -2.2250738585072014e-308.
        24
    }
}

fn decimal_digits(mut u: u64) -> usize {
    let mut digits = 1;
    while u >= 10 {
        u /= 10;
        digits += 1;
    }
    digits
}

fn write_number(out: &mut String, n: &Number) {
    // serde_json's own formatting: `Number`'s Display uses the same itoa/float formatter
    // as its serializer (a Value never holds NaN or infinity). Writing to a String cannot fail.
    let _ = write!(out, "{n}");
}

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Bytes JSON requires escaped: control characters, the quote and the backslash.
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// A word with the high bit set in the byte of the first (lowest-addressed) byte of `word`
/// that needs an escape; zero when none does. Bytes after the first match may be flagged
/// falsely (a borrow runs upwards), so only the lowest flag is used.
fn escape_mask(word: u64) -> u64 {
    // Per byte, b - k sets the high bit when b < k (k <= 0x80): b < 0x20 directly, and
    // b == c as b ^ c < 1. Bytes with their own high bit set (non-ASCII, never escaped) are
    // dropped by `& !word`; xor with an ASCII constant keeps that bit, so one `!word` serves.
    let below_space = word.wrapping_sub(LOW_BITS * 0x20);
    let quote = (word ^ (LOW_BITS * u64::from(b'"'))).wrapping_sub(LOW_BITS);
    let backslash = (word ^ (LOW_BITS * u64::from(b'\\'))).wrapping_sub(LOW_BITS);
    (below_space | quote | backslash) & !word & HIGH_BITS
}

/// The index of the first byte at or after `from` that needs an escape.
fn find_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    // Two words per step: long runs with nothing to escape are the common case, and one test
    // of both masks halves the loop overhead.
    let mut pairs = bytes[from..].chunks_exact(16);
    for pair in pairs.by_ref() {
        let (low, high) = pair.split_at(8);
        let (low, high) = (escape_mask(word(low)), escape_mask(word(high)));
        if low | high != 0 {
            return Some(match low {
                0 => at + 8 + first_flagged(high),
                _ => at + first_flagged(low),
            });
        }
        at += 16;
    }
    let mut rest = pairs.remainder();
    if rest.len() >= 8 {
        let (head, tail) = rest.split_at(8);
        let mask = escape_mask(word(head));
        if mask != 0 {
            return Some(at + first_flagged(mask));
        }
        at += 8;
        rest = tail;
    }
    rest.iter().position(|&b| needs_escape(b)).map(|i| at + i)
}

fn word(eight: &[u8]) -> u64 {
    u64::from_le_bytes(eight.try_into().expect("8 bytes"))
}

/// The index in its word of the byte a non-zero mask flags first. Little-endian: the lowest
/// set bit is in the first byte.
fn first_flagged(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

fn push_escape(out: &mut String, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => "\\\"",
        b'\\' => "\\\\",
        b'\n' => "\\n",
        b'\r' => "\\r",
        b'\t' => "\\t",
        0x08 => "\\b",
        0x0c => "\\f",
        _ => {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
            return;
        }
    };
    out.push_str(short);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(value: &Value) {
        let want = serde_json::to_string(value).unwrap();
        assert_eq!(to_string(value), want, "for {value:?}");
        let mut appended = String::from("x");
        write_value(&mut appended, value);
        assert_eq!(&appended[1..], want);
    }

    #[test]
    fn every_ascii_byte_alone_and_in_context() {
        for b in 0u8..=0x7f {
            let c = char::from(b);
            check(&Value::from(c.to_string()));
            check(&Value::from(format!("abc{c}defghijklmnop{c}{c}q")));
        }
        let all: String = (0u8..=0x7f).map(char::from).collect();
        check(&Value::from(all));
    }

    #[test]
    fn multi_byte_utf8_and_del_are_copied() {
        for s in [
            "é",
            "日本語のテキスト",
            "😀 emoji\u{7f}",
            "\u{80}\u{7ff}\u{800}\u{ffff}",
        ] {
            check(&Value::from(s));
            check(&Value::from(format!("{s}\"{s}\\{s}\n{s}")));
        }
        // Bytes >= 0x80 next to specials must not hide or fake a match.
        check(&Value::from("\u{a2}\"\u{5c2}\u{1c}\u{a0}\u{9f}"));
    }

    #[test]
    fn specials_at_every_position_around_word_boundaries() {
        for special in ['"', '\\', '\n', '\u{0}', '\u{1f}', '\u{8}', '\u{c}'] {
            for len in 0usize..=40 {
                for at in 0..len {
                    let s: String = (0..len)
                        .map(|i| if i == at { special } else { 'a' })
                        .collect();
                    check(&Value::from(s));
                }
                // Two specials: one in the word, one after it.
                for at in 0..len.saturating_sub(1) {
                    let s: String = (0..len)
                        .map(|i| {
                            if i == at || i == len - 1 {
                                special
                            } else {
                                'é'
                            }
                        })
                        .collect();
                    check(&Value::from(s));
                }
            }
        }
    }

    #[test]
    fn containers_and_scalars() {
        for v in [
            json!(""),
            json!([]),
            json!({}),
            json!(null),
            json!(true),
            json!(false),
            json!([[], {}, [[]], {"": {}}]),
            json!({"a": [1, "two", {"three": null}], "b\n\"": {"c": [true, false]}}),
            json!(i64::MIN),
            json!(i64::MAX),
            json!(u64::MAX),
            json!(0),
            json!(-1),
            json!(0.1),
            json!(1e300),
            json!(-0.0),
            json!(1.5e-308),
            json!(f64::MIN_POSITIVE),
            json!(f64::MAX),
            json!(-2.2250738585072014e-308),
            json!(123456789.0),
            json!([0.5, -3, 7, 1e21, 1e-7]),
        ] {
            check(&v);
        }
    }

    #[test]
    fn the_estimate_is_exact_without_escapes_or_floats() {
        let v = json!({"content": [{"type": "text", "text": "é".repeat(100)}],
                       "n": [0, 9, 10, -10, u64::MAX, i64::MIN], "ok": [true, false, null]});
        assert_eq!(estimated_len(&v), serde_json::to_string(&v).unwrap().len());
        assert_eq!(to_string(&v).capacity(), estimated_len(&v) + 1);
    }

    /// xorshift64: deterministic, no dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn random_string(rng: &mut Rng) -> String {
        // Weighted to the bytes that matter: specials, controls, bytes near them, non-ASCII.
        const PIECES: &[&str] = &[
            "\"", "\\", "\n", "\r", "\t", "\u{8}", "\u{c}", "\u{0}", "\u{1}", "\u{1f}", " ", "!",
            "#", "[", "]", "\u{7f}", "é", "€", "😀", "a", "a", "a", "a", "a", "Z", "0",
        ];
        let len = rng.below(65);
        (0..len)
            .map(|_| PIECES[rng.below(PIECES.len() as u64) as usize])
            .collect()
    }

    fn random_value(rng: &mut Rng, depth: u32) -> Value {
        let kinds = if depth == 0 { 5 } else { 7 };
        match rng.below(kinds) {
            0 => Value::Null,
            1 => Value::Bool(rng.below(2) == 0),
            2 => match rng.below(3) {
                0 => Value::from(rng.next()),
                1 => Value::from(rng.next() as i64),
                // Random bit patterns: every float class; NaN and infinity become null.
                _ => Value::from(f64::from_bits(rng.next())),
            },
            3 | 4 => Value::from(random_string(rng)),
            5 => (0..rng.below(5))
                .map(|_| random_value(rng, depth - 1))
                .collect(),
            _ => Value::Object(
                (0..rng.below(5))
                    .map(|_| (random_string(rng), random_value(rng, depth - 1)))
                    .collect(),
            ),
        }
    }

    #[test]
    fn random_strings_and_values_match_serde_json() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            check(&Value::from(random_string(&mut rng)));
        }
        for _ in 0..3_000 {
            check(&random_value(&mut rng, 4));
        }
    }
}
