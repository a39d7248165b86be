//! Notifications the client sends: any, by method, and `notifications/roots/list_changed`.

use super::Client;
use crate::error::{Error, Result, Status};
use crate::protocol::methods;
use serde_json::Value;

impl Client {
    /// Sends a notification (no answer is expected) from the caller's thread. `params`, when
    /// given, must be a JSON object. Any era: the 2026-07-28 revision defines no client
    /// notification but `notifications/cancelled`, so in that era what the server makes of
    /// another one is its own affair (over HTTP a server may acknowledge and drop it).
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        if method.is_empty() {
            return Err(Error::invalid("notification method must not be empty"));
        }
        if params.as_ref().is_some_and(|p| !p.is_object()) {
            return Err(Error::invalid("notification params must be a JSON object"));
        }
        self.core
            .session()?
            .connection
            .notify(method, params.as_ref())
    }

    /// `notifications/roots/list_changed`: the roots the roots handler answers with have
    /// changed (handshake era; the modern era removed it, NOT_SUPPORTED there). The client
    /// declares `roots.listChanged` when a `roots/list` handler is registered; without one the
    /// server was never told of roots, and this is INVALID_ARGUMENT.
    pub fn notify_roots_list_changed(&self) -> Result<()> {
        let session = self.core.session()?;
        if session.envelope.is_some() {
            return Err(Error::new(
                Status::NotSupported,
                "notifications/roots/list_changed does not exist in the modern protocol era (2026-07-28) this connection speaks",
            ));
        }
        if self.core.capabilities().get("roots").is_none() {
            return Err(Error::invalid(
                "the client declared no roots capability (register a roots/list handler)",
            ));
        }
        session.connection.notify(methods::ROOTS_LIST_CHANGED, None)
    }
}
