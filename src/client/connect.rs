//! Connecting: which era the server speaks, and the handshake or discovery that goes with it.
//!
//! Auto mode (the default) sends `server/discover` stamped with the modern envelope. A valid
//! discover result with a version we share means modern. A JSON-RPC error, a malformed result,
//! no shared version or no answer within the probe timeout means the handshake era: we fall
//! back to `initialize` on the same connection. A pinned modern version is never downgraded,
//! and a failed transport is never taken for a verdict on the era.

use super::{ClientCore, Negotiated};
use crate::engine::{CallOptions, Connection, RequestBody};
use crate::error::{Error, Result, Status};
use crate::handlers::LogLevel;
use crate::protocol::envelope::Envelope;
use crate::protocol::{methods, versions};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Which protocol era to speak. The numbers are part of the C ABI.
// C knows it as `mcp_connect_mode`: cbindgen.toml renames it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnectMode {
    /// Probe with `server/discover`; fall back to the `initialize` handshake.
    #[default]
    Auto = 0,
    /// The `initialize` handshake only (2025-11-25 and older).
    Legacy = 1,
    /// `server/discover` and per-request `_meta` only (2026-07-28).
    Modern = 2,
}

/// Why the discover probe did not make the connection modern.
enum ProbeFailure {
    /// The server is not a modern server we can speak to: the handshake may still work.
    NotModern(Error),
    /// Stop here: the transport failed, or the server is modern with no version in common.
    Fatal(Error),
}

/// The JSON-RPC code of "unsupported protocol version" (modern era).
pub(super) const UNSUPPORTED_VERSION: i64 = -32022;

impl ClientCore {
    /// Learns the era within `deadline` (the end of connect's time; `None`: no end).
    pub(super) fn negotiate(
        &self,
        connection: &Connection,
        deadline: Option<Instant>,
    ) -> Result<Negotiated> {
        let pinned = self.options.protocol_version.as_deref();
        if let Some(v) = pinned {
            versions::check_supported(v)?;
        }
        let (handshake_pin, modern_pin) = match pinned {
            Some(v) if versions::is_handshake_version(v) => (Some(v), None),
            Some(v) => (None, Some(v)),
            None => (None, None),
        };
        // The HTTP+SSE transport has no modern era: no probe.
        if connection.handshake_only() {
            return match (self.options.mode, modern_pin) {
                (ConnectMode::Modern, _) | (_, Some(_)) => Err(Error::invalid(
                    "the HTTP+SSE transport has only the initialize handshake (2025-11-25 and \
                     older); use the legacy or auto mode and no modern protocol version",
                )),
                _ => self.handshake(connection, handshake_pin, deadline),
            };
        }
        match self.options.mode {
            ConnectMode::Legacy if modern_pin.is_some() => Err(Error::invalid(format!(
                "protocol version {:?} cannot be negotiated through the legacy initialize handshake; use the modern or auto mode",
                pinned.unwrap_or_default()
            ))),
            ConnectMode::Legacy => self.handshake(connection, handshake_pin, deadline),
            ConnectMode::Modern if handshake_pin.is_some() => Err(Error::invalid(format!(
                "protocol version {:?} is not a modern protocol version",
                pinned.unwrap_or_default()
            ))),
            ConnectMode::Modern => {
                let version = modern_pin.unwrap_or(versions::LATEST_MODERN);
                self.discover_era(connection, version, self.time_left(deadline)?)
                    .map_err(|failure| match failure {
                        ProbeFailure::NotModern(e) | ProbeFailure::Fatal(e) => e,
                    })
            }
            // An explicit handshake version pins the handshake: no probe.
            ConnectMode::Auto if handshake_pin.is_some() => {
                self.handshake(connection, handshake_pin, deadline)
            }
            ConnectMode::Auto => {
                let version = modern_pin.unwrap_or(versions::LATEST_MODERN);
                let probe = self.time_left(deadline)?.min(self.options.discover_timeout);
                match self.discover_era(connection, version, probe) {
                    Ok(negotiated) => Ok(negotiated),
                    Err(ProbeFailure::NotModern(e)) if modern_pin.is_none() => {
                        // Queued: this thread holds the connect lock, and the callback may call connect.
                        connection.log(LogLevel::Info, &format!("{e}; using the initialize handshake"));
                        match self.handshake(connection, None, deadline) {
                            // A slow modern server (the probe timed out while it started) refuses
                            // `initialize` naming its modern versions: it is modern after all.
                            Err(e) if refuses_handshake_for_modern(&e) => {
                                connection.log(LogLevel::Info, "initialize refused for a modern version; using server/discover");
                                let timeout = self.time_left(deadline)?;
                                self.discover_era(connection, version, timeout).map_err(|failure| match failure {
                                    ProbeFailure::NotModern(e) | ProbeFailure::Fatal(e) => e,
                                })
                            }
                            other => other,
                        }
                    }
                    Err(ProbeFailure::NotModern(e) | ProbeFailure::Fatal(e)) => Err(e),
                }
            }
        }
    }

    /// The modern era: `server/discover`, retried once on -32022 with a shared version.
    fn discover_era(
        &self,
        connection: &Connection,
        version: &str,
        timeout: Duration,
    ) -> std::result::Result<Negotiated, ProbeFailure> {
        use ProbeFailure::{Fatal, NotModern};
        let opts = CallOptions {
            timeout: Some(timeout),
            cancel_on_wire: false,
            ..CallOptions::default()
        };
        let mut envelope = self.envelope(version);
        let mut retried = false;
        let result = loop {
            match connection.call(
                RequestBody::new(methods::DISCOVER, None).stamped(Some(&envelope)),
                &opts,
            ) {
                Ok(result) => break result,
                // A refusal of our credentials says nothing about the era (and the OAuth
                // flow has run already): falling back would only ask again.
                Err(e)
                    if matches!(
                        e.status,
                        Status::TransportError | Status::Closed | Status::Unauthorized
                    ) =>
                {
                    return Err(Fatal(e))
                }
                Err(e) if e.code == Some(UNSUPPORTED_VERSION) => {
                    let supported =
                        supported_versions(e.data.as_ref().and_then(|d| d.get("supported")));
                    match versions::mutual_modern(supported.iter().map(String::as_str)) {
                        Some(v) if !retried => {
                            retried = true;
                            envelope = self.envelope(v);
                        }
                        _ if supported.iter().any(|v| versions::is_handshake_version(v)) => {
                            return Err(NotModern(e.context("server/discover")))
                        }
                        _ => return Err(Fatal(no_mutual_version(&supported))),
                    }
                }
                Err(e) => return Err(NotModern(e.context("server/discover failed"))),
            }
        };

        let malformed = |why: &str| NotModern(Error::protocol(format!("server/discover: {why}")));
        if !result.is_object() {
            return Err(malformed("the result is not an object"));
        }
        match result.get("resultType") {
            None => {}
            Some(Value::String(kind)) if kind == "complete" => {}
            Some(other) => return Err(malformed(&format!("unexpected resultType {other}"))),
        }
        let Some(Value::Array(listed)) = result.get("supportedVersions") else {
            return Err(malformed("the result has no supportedVersions list"));
        };
        let supported = supported_versions(Some(&Value::Array(listed.clone())));
        let version = if supported.iter().any(|v| v == envelope.protocol_version()) {
            envelope.protocol_version().to_owned()
        } else {
            match versions::mutual_modern(supported.iter().map(String::as_str)) {
                Some(v) => v.to_owned(),
                None => return Err(NotModern(no_mutual_version(&supported))),
            }
        };
        connection.negotiated(&version, true);
        Ok(Negotiated {
            server_info: result,
            envelope: Some(self.envelope(&version)),
            protocol_version: version,
        })
    }

    /// The handshake era: `initialize`, then `notifications/initialized`.
    fn handshake(
        &self,
        connection: &Connection,
        offer: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Negotiated> {
        let params = json!({
            "protocolVersion": offer.unwrap_or(versions::LATEST_HANDSHAKE),
            "capabilities": self.capabilities(),
            "clientInfo": self.options.client_info,
        });
        let opts = CallOptions {
            timeout: Some(self.time_left(deadline)?),
            cancel_on_wire: false,
            ..CallOptions::default()
        };
        let result = connection
            .call(
                RequestBody::new(methods::INITIALIZE, Some(&params.into())),
                &opts,
            )
            .map_err(|e| e.context("initialize failed"))?;
        if !result.is_object() {
            return Err(Error::protocol(
                "initialize failed: the result is not an object",
            ));
        }
        let version = match result.get("protocolVersion") {
            Some(Value::String(v)) if versions::is_handshake_version(v) => v.clone(),
            other => {
                return Err(Error::protocol(format!(
                    "initialize failed: the server chose protocol version {}, which this client \
                     does not support (it supports {})",
                    other.map_or("(none)".to_owned(), Value::to_string),
                    versions::HANDSHAKE_VERSIONS.join(", ")
                )))
            }
        };
        connection.negotiated(&version, false);
        connection
            .notify(methods::INITIALIZED, None)
            .map_err(|e| e.context("notifications/initialized failed"))?;
        Ok(Negotiated {
            server_info: result,
            protocol_version: version,
            envelope: None,
        })
    }

    /// What is left of connect's time, or TIMEOUT once nothing is (a leg given no time would
    /// wait without a limit).
    fn time_left(&self, deadline: Option<Instant>) -> Result<Duration> {
        let Some(deadline) = deadline else {
            return Ok(Duration::MAX);
        };
        match deadline.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(connect_timed_out(self.options.connect_timeout)),
        }
    }

    pub(super) fn envelope(&self, version: &str) -> Envelope {
        Envelope::new(
            version,
            &self.options.client_info,
            &self.modern_capabilities(),
        )
    }
}

/// An `initialize` answered -32022 with a list that holds a modern version we speak.
fn refuses_handshake_for_modern(error: &Error) -> bool {
    let supported = supported_versions(error.data.as_ref().and_then(|d| d.get("supported")));
    error.code == Some(UNSUPPORTED_VERSION)
        && versions::mutual_modern(supported.iter().map(String::as_str)).is_some()
}

/// The strings of a `supported` or `supportedVersions` list.
pub(super) fn supported_versions(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// TIMEOUT: connect as a whole took its whole timeout.
pub(super) fn connect_timed_out(timeout: Duration) -> Error {
    Error::new(
        Status::Timeout,
        format!(
            "connect timed out after {} ms (the connect timeout bounds the whole of connect)",
            timeout.as_millis()
        ),
    )
}

fn no_mutual_version(supported: &[String]) -> Error {
    Error::protocol(format!(
        "no mutually supported modern protocol version (the server supports [{}]; this client {})",
        supported.join(", "),
        versions::MODERN_VERSIONS.join(", ")
    ))
}
