//! Checking JSON text in one pass, without building anything: the stdio reader's fast path
//! for plain answers (`reply::parse_answer`) runs it over every response line.
//!
//! serde_json, asked to skip a value and keep it as text, reads that text several times (its
//! syntax, then its UTF-8, then our own searches for nesting and `resultType`). This scanner
//! reads each byte once: the strict syntax of RFC 8259, the UTF-8 of every string as it goes
//! (outside strings only ASCII is valid JSON, so nothing else needs checking), and a nesting
//! limit. Strings, most of a response's bytes, are scanned 16 bytes at a time for the few
//! bytes that need a look (a quote, a backslash, a control character, a byte of a multi-byte
//! character).
//!
//! It checks what serde_json's skipping checks, no more: a `\u` escape needs four hex digits
//! but may be a lone surrogate, and numbers have no range. A text it accepts is valid JSON.

/// A position in a text being checked. Every method either accepts what is at the position and
/// moves past it, or returns `None` (the text is not what was asked for; the position is then
/// somewhere inside it).
pub struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    /// A string held a byte above 0x7F (checked as UTF-8): without one, the text is ASCII.
    non_ascii: bool,
    /// An array or object was refused for nesting deeper than the depth allowed.
    too_deep: bool,
}

impl<'a> Scan<'a> {
    pub fn new(bytes: &'a [u8]) -> Scan<'a> {
        Scan {
            bytes,
            at: 0,
            non_ascii: false,
            too_deep: false,
        }
    }

    pub fn position(&self) -> usize {
        self.at
    }

    /// Whether every byte accepted so far was ASCII.
    pub fn ascii_only(&self) -> bool {
        !self.non_ascii
    }

    /// Whether a refusal was for nesting deeper than allowed.
    pub fn too_deep(&self) -> bool {
        self.too_deep
    }

    pub fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }

    pub fn whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The byte at the position, taken.
    pub fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    pub fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    pub fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// A string: its body (between the quotes, escapes as written) and whether it holds an
    /// escape.
    pub fn string(&mut self) -> Option<(&'a [u8], bool)> {
        self.expect(b'"')?;
        let start = self.at;
        let mut escaped = false;
        loop {
            self.at = find_special(self.bytes, self.at);
            match self.peek()? {
                b'"' => {
                    let body = &self.bytes[start..self.at];
                    self.at += 1;
                    return Some((body, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                0x80.. => self.multi_byte_char()?,
                _ => return None, // a control character
            }
        }
    }

    fn escape(&mut self) -> Option<()> {
        let kind = *self.bytes.get(self.at + 1)?;
        self.at += 2;
        match kind {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(()),
            b'u' => {
                let hex = self.bytes.get(self.at..self.at + 4)?;
                self.at += 4;
                hex.iter().all(u8::is_ascii_hexdigit).then_some(())
            }
            _ => None,
        }
    }

    /// One character of two to four bytes, checked by the standard library's own rules
    /// (no overlong forms, no surrogates, nothing above U+10FFFF).
    fn multi_byte_char(&mut self) -> Option<()> {
        let width = match self.bytes[self.at] {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return None,
        };
        let char = self.bytes.get(self.at..self.at + width)?;
        std::str::from_utf8(char).ok()?;
        self.non_ascii = true;
        self.at += width;
        Some(())
    }

    /// A number that is an integer in i64's range (no fraction, no exponent), as serde_json
    /// reads one: `-0` is not (serde_json keeps it as the float -0.0).
    pub fn integer(&mut self) -> Option<i64> {
        let start = self.at;
        self.number()?;
        let text = &self.bytes[start..self.at];
        let (negative, digits) = match text.split_first() {
            Some((b'-', digits)) => (true, digits),
            _ => (false, text),
        };
        if negative && digits == b"0" {
            return None;
        }
        // Digit by digit, towards the sign (so i64::MIN fits); a fraction or an exponent
        // stops it. The id of every answer comes through here: no text-to-number parse.
        let mut value: i64 = 0;
        for &byte in digits {
            if !byte.is_ascii_digit() {
                return None;
            }
            let digit = i64::from(byte - b'0');
            value = value.checked_mul(10)?;
            value = match negative {
                true => value.checked_sub(digit)?,
                false => value.checked_add(digit)?,
            };
        }
        Some(value)
    }

    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }

    /// Any value, with at most `depth` arrays and objects nested in it (itself included).
    pub fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string().map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An object, as [`Scan::value`].
    fn object(&mut self, depth: usize) -> Option<()> {
        self.members(depth, |scan, _, _, depth| scan.value(depth))
    }

    /// An object, as [`Scan::value`], whose members are shown one by one to
    /// `member(scan, name, whether the name holds an escape, depth left)`, which must take the
    /// member's value from `scan` (or refuse it with `None`, which refuses the object).
    pub fn members(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Scan<'a>, &'a [u8], bool, usize) -> Option<()>,
    ) -> Option<()> {
        let depth = self.nest(depth)?;
        self.expect(b'{')?;
        self.whitespace();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.whitespace();
            let (name, escaped) = self.string()?;
            self.whitespace();
            self.expect(b':')?;
            self.whitespace();
            member(self, name, escaped, depth)?;
            self.whitespace();
            match self.next()? {
                b',' => {}
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        let depth = self.nest(depth)?;
        self.expect(b'[')?;
        self.whitespace();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.whitespace();
            self.value(depth)?;
            self.whitespace();
            match self.next()? {
                b',' => {}
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    /// The depth left inside a container entered with `depth` left.
    fn nest(&mut self, depth: usize) -> Option<usize> {
        let inner = depth.checked_sub(1);
        self.too_deep |= inner.is_none();
        inner
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let found = self.bytes.get(self.at..self.at + word.len())? == word;
        self.at += word.len();
        found.then_some(())
    }
}

/// The first byte at or after `at` that a string scan must look at: a quote, a backslash, a
/// control character, or a byte above 0x7F; `bytes.len()` when there is none.
fn find_special(bytes: &[u8], mut at: usize) -> usize {
    // Most strings of a frame are short (member names, "2.0", "text"): their first 16 bytes
    // are looked at eight at a time first, without the wide searches' setup.
    for _ in 0..2 {
        let Some(chunk) = bytes.get(at..at + 8) else {
            break;
        };
        let mask = special_bytes(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        if mask != 0 {
            return at + (mask.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, as just checked.
            match unsafe { find_special_avx2(bytes, at) } {
                Ok(found) => return found,
                Err(rest) => at = rest,
            }
        }
        // SAFETY: SSE2 is part of every x86_64 processor; each load reads 16 bytes that lie
        // inside `bytes` (the loop stops 16 bytes before its end).
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let space = _mm_set1_epi8(0x20);
            while at + 16 <= bytes.len() {
                let chunk = _mm_loadu_si128(bytes.as_ptr().add(at).cast());
                // A signed compare: bytes above 0x7F are negative, so "below a space" takes
                // them along with the control characters.
                let hits = _mm_or_si128(
                    _mm_or_si128(
                        _mm_cmpeq_epi8(chunk, quote),
                        _mm_cmpeq_epi8(chunk, backslash),
                    ),
                    _mm_cmplt_epi8(chunk, space),
                );
                let mask = _mm_movemask_epi8(hits) as u32;
                if mask != 0 {
                    return at + mask.trailing_zeros() as usize;
                }
                at += 16;
            }
        }
    }
    // Elsewhere, and for the last bytes: eight at a time in a u64.
    while at + 8 <= bytes.len() {
        let word = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"));
        let mask = special_bytes(word);
        if mask != 0 {
            return at + (mask.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < bytes.len() && !is_special(bytes[at]) {
        at += 1;
    }
    at
}

/// [`find_special`] 32 bytes at a time (64 while there are as many left: one test for two
/// loads): `Ok` with the position found, or `Err` with where the last 31 bytes or fewer begin,
/// for the narrower searches.
///
/// # Safety
/// The processor must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn find_special_avx2(bytes: &[u8], mut at: usize) -> Result<usize, usize> {
    use std::arch::x86_64::*;
    // The bytes of 32 at `at` that a string scan must look at, as 0xFF (else 0).
    let specials = |at: usize| {
        let quote = _mm256_set1_epi8(b'"' as i8);
        let backslash = _mm256_set1_epi8(b'\\' as i8);
        let below_space = _mm256_set1_epi8(0x20);
        // SAFETY: the callers below read 32 bytes inside `bytes` only.
        let chunk = unsafe { _mm256_loadu_si256(bytes.as_ptr().add(at).cast()) };
        // Signed, as in the SSE2 search: bytes above 0x7F count as below a space.
        _mm256_or_si256(
            _mm256_or_si256(
                _mm256_cmpeq_epi8(chunk, quote),
                _mm256_cmpeq_epi8(chunk, backslash),
            ),
            _mm256_cmpgt_epi8(below_space, chunk),
        )
    };
    let first = |hits: __m256i| _mm256_movemask_epi8(hits).trailing_zeros() as usize;
    while at + 64 <= bytes.len() {
        let (low, high) = (specials(at), specials(at + 32));
        let both = _mm256_or_si256(low, high);
        if _mm256_testz_si256(both, both) == 0 {
            return Ok(match _mm256_testz_si256(low, low) {
                0 => at + first(low),
                _ => at + 32 + first(high),
            });
        }
        at += 64;
    }
    while at + 32 <= bytes.len() {
        let hits = specials(at);
        if _mm256_testz_si256(hits, hits) == 0 {
            return Ok(at + first(hits));
        }
        at += 32;
    }
    Err(at)
}

/// The high bit of each byte of `word` that [`is_special`] takes, and possibly of bytes above
/// the first such (a borrow carries upwards): the lowest bit set is always a true one.
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control | (word & HIGH)
}

fn is_special(byte: u8) -> bool {
    matches!(byte, b'"' | b'\\' | 0..=0x1F | 0x80..)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(text: &str) -> bool {
        let mut scan = Scan::new(text.as_bytes());
        scan.whitespace();
        let ok = scan.value(128).is_some();
        scan.whitespace();
        ok && scan.at_end()
    }

    #[test]
    fn agrees_with_serde_json_on_hand_picked_texts() {
        for text in [
            "0",
            "-0",
            "01",
            "1.",
            "1.5",
            "-1.5e+10",
            "1e",
            "1E-2",
            "-",
            "+1",
            ".5",
            "true",
            "tru",
            "truex",
            "null",
            "nul",
            "false",
            r#""""#,
            r#""a"#,
            r#""\q""#,
            r#""\u12""#,
            r#""\u12G4""#,
            r#""\uD800""#,
            r#""\/\b\f\n\r\t\"\\""#,
            "\"\t\"",
            "\"\u{7f}\"",
            "\"é日𝄞\"",
            "[]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{}",
            r#"{"a":1,}"#,
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{1:2}"#,
            r#"{"a":1 "b":2}"#,
            " [ 1 , { \"b\" : [ ] } ] ",
            "[1]]",
            "{\"a\":[{}]}",
            "",
        ] {
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
            assert_eq!(valid(text), serde, "{text:?}");
        }
    }

    /// Every byte value at every position of a 72-byte string (both sides of the 32-, 16- and
    /// 8-byte chunks) is found or passed over exactly as one byte at a time would.
    #[test]
    fn the_chunked_search_finds_what_a_byte_by_byte_search_finds() {
        // From 0: a 64-byte step, a 32-byte step, then eight bytes at a time; from other
        // starts, every narrower search too.
        const LEN: usize = 104;
        for byte in 0..=255u8 {
            for at in 0..LEN {
                let mut bytes = vec![b'a'; LEN];
                bytes[at] = byte;
                let slow = |from: usize| (from..LEN).find(|&i| is_special(bytes[i])).unwrap_or(LEN);
                for from in [0, 1, 7, 9, 17, 33, 41] {
                    assert_eq!(
                        find_special(&bytes, from),
                        slow(from),
                        "byte {byte:#x} at {at} from {from}"
                    );
                }
            }
        }
    }

    #[test]
    fn utf8_in_strings_is_checked_and_only_there() {
        for bytes in [
            &b"\"\xC3\xA9\""[..],
            b"\"\xE6\x97\xA5\"",
            b"\"\xF0\x9D\x84\x9E\"",
            b"\"\xC0\xAF\"",         // overlong
            b"\"\xED\xA0\x80\"",     // a surrogate
            b"\"\xF4\x90\x80\x80\"", // above U+10FFFF
            b"\"\xC3\"",             // cut short
            b"\"\x80\"",             // a continuation byte alone
            b"\xC3\xA9",             // outside a string
        ] {
            let mut scan = Scan::new(bytes);
            let ours = scan.value(1).is_some() && scan.at_end();
            // Parsed, not skipped: serde_json skips a string without checking its UTF-8.
            let serde = serde_json::from_slice::<serde_json::Value>(bytes).is_ok();
            assert_eq!(ours, serde, "{bytes:x?}");
            assert_eq!(scan.ascii_only(), !ours, "{bytes:x?}");
        }
    }

    #[test]
    fn nesting_beyond_the_depth_is_refused() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(Scan::new(nested(3).as_bytes()).value(3).is_some());
        let four = nested(4);
        let mut scan = Scan::new(four.as_bytes());
        assert!(scan.value(3).is_none());
        assert!(scan.too_deep());
        let mut scan = Scan::new(b"[[1,]]");
        assert!(scan.value(3).is_none());
        assert!(!scan.too_deep(), "refused for its syntax");
        let objects = r#"{"a":{"b":{}}}"#;
        assert!(Scan::new(objects.as_bytes()).value(3).is_some());
        assert!(Scan::new(objects.as_bytes()).value(2).is_none());
    }

    #[test]
    fn an_object_shows_its_own_member_names_only() {
        let text = br#"{"a":1,"b\u0041":{"inner":2},"c":[{"d":3}]}"#;
        let mut names = Vec::new();
        Scan::new(text)
            .members(10, |scan, name, escaped, depth| {
                names.push((name.to_vec(), escaped));
                scan.value(depth)
            })
            .unwrap();
        assert_eq!(
            names,
            [
                (b"a".to_vec(), false),
                (b"b\\u0041".to_vec(), true),
                (b"c".to_vec(), false)
            ]
        );
    }

    #[test]
    fn integers_beyond_i64_or_with_a_fraction_are_not_integers() {
        for (text, expected) in [
            ("7", Some(7)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("-9223372036854775809", None),
            ("9223372036854775807", Some(i64::MAX)),
            ("9223372036854775808", None),
            ("-1234", Some(-1234)),
            ("4201", Some(4201)),
            ("10E1", None),
            ("-0.5", None),
            ("1.0", None),
            ("1e2", None),
            ("-0", None),
            ("0", Some(0)),
        ] {
            assert_eq!(Scan::new(text.as_bytes()).integer(), expected, "{text}");
        }
    }
}
