//! Protocol versions of both eras.
//!
//! The handshake (legacy) era negotiates a version once, in `initialize`. The modern era
//! (2026-07-28 and later) has no handshake: every request names its version in `_meta`.

/// What the client offers in `initialize`.
pub const LATEST_HANDSHAKE: &str = "2025-11-25";

/// Versions a server may answer `initialize` with; anything else ends the connect.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The modern versions we speak, newest first.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

pub const LATEST_MODERN: &str = MODERN_VERSIONS[0];

pub fn is_handshake_version(version: &str) -> bool {
    HANDSHAKE_VERSIONS.contains(&version)
}

pub fn is_modern_version(version: &str) -> bool {
    MODERN_VERSIONS.contains(&version)
}

/// A version a host may pin: one of either era's.
pub fn check_supported(version: &str) -> crate::error::Result<()> {
    match is_handshake_version(version) || is_modern_version(version) {
        true => Ok(()),
        false => Err(crate::error::Error::invalid(format!(
            "unsupported protocol version {version:?}"
        ))),
    }
}

/// The newest modern version in both our list and `theirs`.
pub fn mutual_modern<'a>(theirs: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    let theirs: Vec<&str> = theirs.into_iter().collect();
    MODERN_VERSIONS.into_iter().find(|v| theirs.contains(v))
}
