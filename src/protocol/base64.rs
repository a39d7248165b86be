//! Standard base64, for the header values that need it (encoded header text, Basic
//! credentials), and its decoding for the PEM keys a host gives.

/// Standard base64 with padding (RFC 4648 section 4).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64, skipping whitespace (PEM wraps its lines); `None` on any other
/// character outside the alphabet or a truncated group.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut group = 0u32;
    let mut filled = 0;
    let mut padding = 0;
    for byte in text.bytes().filter(|b| !b.is_ascii_whitespace()) {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                padding += 1;
                0
            }
            _ => return None,
        };
        // Nothing but padding may follow padding.
        if (padding > 0 && byte != b'=') || padding > 2 {
            return None;
        }
        group = group << 6 | u32::from(value);
        filled += 1;
        if filled == 4 {
            let bytes = group.to_be_bytes();
            out.extend_from_slice(&bytes[1..4 - padding]);
            group = 0;
            filled = 0;
        }
    }
    (filled == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_undoes_encoding_and_refuses_what_is_not_base64() {
        for plain in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let encoded = base64(plain.as_bytes());
            assert_eq!(decode_base64(&encoded).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(
            decode_base64("Zm9v\nYmFy\n").as_deref(),
            Some(&b"foobar"[..])
        );
        for bad in ["Zm9", "Zm9*", "Zg==Zg==", "Z==="] {
            assert_eq!(decode_base64(bad), None, "{bad}");
        }
    }

    #[test]
    fn base64_matches_the_rfc_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }
}
