//! Protocol versions of the handshake (legacy) era.

/// What the client offers in `initialize`.
pub const LATEST_HANDSHAKE: &str = "2025-11-25";

/// Versions a server may answer `initialize` with; anything else ends the connect.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

pub fn is_handshake_version(version: &str) -> bool {
    HANDSHAKE_VERSIONS.contains(&version)
}
