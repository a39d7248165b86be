//! How a client with self-healing connections paces its attempts to connect again (the C API's
//! `mcp_client_options_set_reconnect_policy`).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// When set in [`ClientOptions::reconnect`](super::ClientOptions::reconnect), a request that
/// finds the connection failed (the stdio server exited, the HTTP server ended the session)
/// connects again first, with the same handshake, and the listens open are established again.
/// A request already sent when the failure came is never sent again.
///
/// Each such request makes up to `max_attempts` connects. After a failed one it waits
/// `first_delay`, doubled after each further failure up to `max_delay`, each wait moved by up
/// to `jitter` of itself either way (so that many clients of one server do not come back all
/// at once). The request's cancel, its timeout and `close` end a wait at once. When every
/// attempt failed, the request fails with the last connect's error, and the next request
/// starts a new series.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconnectPolicy {
    /// The wait after the first failed attempt (default 100 ms).
    pub first_delay: Duration,
    /// The longest wait (default 30 s).
    pub max_delay: Duration,
    /// How far each wait may move, as a fraction of it, from 0 (none) to 1 (default 0.2).
    pub jitter: f64,
    /// The most connects one request makes, the first included (default 5; 0 counts as 1).
    pub max_attempts: u32,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            first_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(30),
            jitter: 0.2,
            max_attempts: 5,
        }
    }
}

impl ReconnectPolicy {
    /// The wait after `failed` attempts (1 for the first failure).
    pub fn delay_after(&self, failed: u32) -> Duration {
        let doublings = failed.saturating_sub(1).min(32);
        let base = self
            .first_delay
            .saturating_mul(1 << doublings.min(31))
            .min(self.max_delay);
        let jitter = if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        // A factor in [1 - jitter, 1 + jitter].
        let factor = 1.0 + jitter * (2.0 * random_fraction() - 1.0);
        // Computed in seconds: any Duration may be given, the largest ones included.
        Duration::try_from_secs_f64(base.as_secs_f64() * factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// The number of attempts one request makes.
    pub fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }
}

/// A number in [0, 1), different each call (the standard library's per-instance random keys).
fn random_fraction() -> f64 {
    let bits = RandomState::new().build_hasher().finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_maximum_within_the_jitter() {
        let policy = ReconnectPolicy {
            first_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            jitter: 0.2,
            max_attempts: 10,
        };
        for (failed, base) in [
            (1, 100),
            (2, 200),
            (3, 400),
            (4, 800),
            (5, 1000),
            (40, 1000),
        ] {
            let delay = policy.delay_after(failed).as_millis();
            assert!(
                delay >= base * 8 / 10 && delay <= (base * 12 / 10).min(1000),
                "after {failed} failures: {delay} ms"
            );
        }
        let exact = ReconnectPolicy {
            jitter: 0.0,
            ..policy
        };
        assert_eq!(exact.delay_after(3), Duration::from_millis(400));
        assert_eq!(
            ReconnectPolicy {
                max_attempts: 0,
                ..exact.clone()
            }
            .attempts(),
            1
        );
        // The largest values neither panic nor wrap; a jitter that is not a number is none.
        let huge = ReconnectPolicy {
            first_delay: Duration::MAX,
            max_delay: Duration::MAX,
            jitter: 1.0,
            max_attempts: u32::MAX,
        };
        assert!(huge.delay_after(u32::MAX) <= Duration::MAX);
        let nan = ReconnectPolicy {
            jitter: f64::NAN,
            ..exact
        };
        assert_eq!(nan.delay_after(1), Duration::from_millis(100));
    }
}
