//! Workload identity federation: the JWT-bearer grant (RFC 7523 section 2.1, RFC 7521
//! section 4.1), where a token the platform issued to this workload (a Kubernetes service
//! account token, a cloud instance identity) is the authorization grant. The platform
//! rotates it, so it is fetched anew for every token request: from the host's provider, or
//! read again from its file.

use super::form::failed;
use crate::error::Result;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// The `grant_type` of the JWT-bearer grant.
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The longest workload token accepted (platform JWTs are a few KiB).
const ASSERTION_LIMIT: usize = 64 * 1024;

/// Gives the workload's current JWT, or an error text. Runs on the thread of the token
/// request, with no lock held.
pub type AssertionProvider = Arc<dyn Fn() -> std::result::Result<String, String> + Send + Sync>;

/// Where the workload's JWT comes from.
#[derive(Clone)]
pub enum WorkloadIdentity {
    /// A file the platform keeps current (read again for each token request).
    File(PathBuf),
    /// The host's provider.
    Provider(AssertionProvider),
}

impl WorkloadIdentity {
    /// The current JWT, trimmed; refused (UNAUTHORIZED, naming the source but never quoting
    /// it) when it cannot be had, is empty or too long, or is not a compact JWT.
    pub fn assertion(&self) -> Result<String> {
        let text = match self {
            WorkloadIdentity::File(path) => {
                let size = std::fs::metadata(path).map(|m| m.len()).map_err(|e| {
                    failed(format!(
                        "cannot read the workload token file {}: {e}",
                        path.display()
                    ))
                })?;
                if size > ASSERTION_LIMIT as u64 {
                    return Err(failed(format!(
                        "the workload token file {} is over {} KiB",
                        path.display(),
                        ASSERTION_LIMIT / 1024
                    )));
                }
                std::fs::read_to_string(path).map_err(|e| {
                    failed(format!(
                        "cannot read the workload token file {}: {e}",
                        path.display()
                    ))
                })?
            }
            WorkloadIdentity::Provider(provider) => provider()
                .map_err(|why| failed(format!("the workload token provider failed: {why}")))?,
        };
        compact_jwt(&text, "workload token")
    }
}

/// `text` trimmed, when it is a compact JWT (three base64url parts) of at most 64 KiB; else
/// UNAUTHORIZED naming `what` but never quoting the text.
pub(super) fn compact_jwt(text: &str, what: &str) -> Result<String> {
    let token = text.trim();
    let parts: Vec<&str> = token.split('.').collect();
    let compact = parts.len() == 3
        && parts[..2].iter().all(|p| !p.is_empty())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if token.len() > ASSERTION_LIMIT || !compact {
        return Err(failed(format!(
            "the {what} is not a compact JWT (three base64url parts) of at most {} KiB",
            ASSERTION_LIMIT / 1024
        )));
    }
    Ok(token.to_owned())
}

impl fmt::Debug for WorkloadIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadIdentity::File(path) => f.debug_tuple("File").field(path).finish(),
            WorkloadIdentity::Provider(_) => f.write_str("Provider"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_trimmed_and_must_be_a_compact_jwt() {
        let give = |text: &'static str| {
            WorkloadIdentity::Provider(Arc::new(move || Ok(text.to_owned()))).assertion()
        };
        assert_eq!(
            give(" aGVhZA.Y2xhaW1z.c2ln\n").unwrap(),
            "aGVhZA.Y2xhaW1z.c2ln"
        );
        for bad in [
            "", "one.two", "a.b.c.d", "a b.c.d", ".b.c", "a.b.c\"", "a.b.c;x",
        ] {
            let error = give(bad).unwrap_err();
            assert!(!error.message.contains(bad) || bad.is_empty(), "{error}");
        }
        let failing = WorkloadIdentity::Provider(Arc::new(|| Err("no token yet".into())));
        assert!(failing
            .assertion()
            .unwrap_err()
            .message
            .contains("no token yet"));
    }
}
