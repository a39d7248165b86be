//! `subscriptions/listen`, and its mapping onto the handshake era, so a host writes one code
//! path for both: [`Client::listen`] blocks its caller for as long as the listen lasts, and the
//! notices go to the client's usual callbacks (list changed, resource updated, message, and the
//! catch-all for the acknowledgement).
//!
//! - Modern era (2026-07-28): one long-lived `subscriptions/listen` request. Its cancel is that
//!   of any call (stdio: `notifications/cancelled`; HTTP: its stream is closed).
//! - Handshake era: `resources/subscribe` for each URI and `logging/setLevel` for the level (list
//!   changes arrive anyway there), then the caller waits; when the listen ends its URIs are
//!   unsubscribed (in the background, so the cancel still returns at once). The library reports
//!   what the server's capabilities honour as a `notifications/subscriptions/acknowledged`
//!   of its own, so a host sees the same first notice in both eras.
//!
//! The reconnect contract: when the connection fails, the listen waits for the host's
//! `connect` to make a new one and listens again there (unless `end_on_failure`); when only a
//! modern HTTP listen stream broke after it had been acknowledged, it listens again at once,
//! with a growing pause if that keeps happening.

use super::lazy::Route;
use super::tasks::Leg;
use super::{closed_error, Client, RequestOptions, Session};
use crate::engine::router::ListenWatch;
use crate::engine::{CallOptions, RequestBody};
use crate::error::{Error, Result, Status};
use crate::handlers::LogLevel;
use crate::protocol::methods;
use crate::sync::spawn;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a listen asks to hear (the C API's `mcp_listen`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listen {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    pub resource_uris: Vec<String>,
    /// `notifications/message` at this level and above ("debug", "info", "notice", "warning",
    /// "error", "critical", "alert", "emergency"). Modern: the listen request's `_meta` log
    /// level; handshake era: `logging/setLevel`.
    pub log_level: Option<String>,
    /// End the listen with the connection's failure instead of waiting for `connect` to make
    /// a new connection and listening again there.
    pub end_on_failure: bool,
}

pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];
/// The pause before listening again after a stream broke, doubled each time up to the max.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);
/// How long the background unsubscribe of a handshake-era listen may take, per URI.
const UNSUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(5);

impl Listen {
    /// The `SubscriptionFilter`: only what is asked for appears.
    pub fn filter(&self) -> Value {
        let mut filter = Map::new();
        for (wanted, key) in [
            (self.tools_list_changed, "toolsListChanged"),
            (self.prompts_list_changed, "promptsListChanged"),
            (self.resources_list_changed, "resourcesListChanged"),
        ] {
            if wanted {
                filter.insert(key.into(), true.into());
            }
        }
        if !self.resource_uris.is_empty() {
            filter.insert("resourceSubscriptions".into(), json!(self.resource_uris));
        }
        Value::Object(filter)
    }

    pub(crate) fn check(&self) -> Result<()> {
        if let Some(level) = &self.log_level {
            if !LOG_LEVELS.contains(&level.as_str()) {
                return Err(Error::invalid(format!(
                    "listen log level {level:?} is not one of {}",
                    LOG_LEVELS.join(", ")
                )));
            }
        }
        if self.resource_uris.iter().any(String::is_empty) {
            return Err(Error::invalid("a listen resource URI must not be empty"));
        }
        Ok(())
    }
}

impl Client {
    /// Listens for what `listen` asks, blocking the caller until the listen ends: the server
    /// ended it (its result: modern only), the token was cancelled (CANCELLED), the request's
    /// own timeout passed (TIMEOUT; the client's default timeout does not apply to a listen),
    /// the client closed (CLOSED), or an error. See the module docs for the two eras and the
    /// reconnect contract. Notices go to the client's callbacks, starting with
    /// `notifications/subscriptions/acknowledged` (the catch-all notification callback) each
    /// time the listen is established.
    pub fn listen(&self, listen: &Listen, opts: &RequestOptions) -> Result<Value> {
        listen.check()?;
        let deadline = opts
            .timeout
            .filter(|t| !t.is_zero())
            .map(|t| Instant::now().checked_add(t));
        let deadline = match deadline {
            Some(None) | None => None,
            Some(Some(at)) => Some(at),
        };
        let hook = opts.cancellation.as_ref().and_then(|token| {
            let changes = self.core.changes.clone();
            token.on_cancel(move |_| changes.notify())
        });
        // An open listen keeps the server from idle shutdown.
        let busy = self.core.busy(&mut self.core.lock());
        let outcome = self.listen_until_end(listen, opts, deadline);
        drop(busy);
        if let (Some(token), Some(hook)) = (&opts.cancellation, hook) {
            token.off_cancel(hook);
        }
        outcome
    }

    fn listen_until_end(
        &self,
        listen: &Listen,
        opts: &RequestOptions,
        deadline: Option<Instant>,
    ) -> Result<Value> {
        let mut pause = RETRY_FIRST;
        loop {
            self.check_listening(opts, deadline)?;
            // Self-healing: the listen connects again itself, and listens there.
            if !listen.end_on_failure && self.core.needs_healing() {
                self.core.heal(opts, deadline)?;
            }
            let session = match self.core.route()? {
                Route::Session(session, _) => session,
                Route::ConnectFirst => {
                    self.core.connect_before(opts, deadline)?;
                    continue;
                }
            };
            if let Some(failure) = session.connection.failure() {
                if listen.end_on_failure {
                    return Err(failure);
                }
                self.await_new_session(&session, opts, deadline)?;
                continue;
            }
            let mut attempt = opts.clone();
            attempt.timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let watch = Arc::new(ListenWatch::default());
            let outcome = match session.envelope.is_some() {
                true => self.listen_modern(listen, &attempt, watch.clone()),
                false => self.listen_legacy(&session, listen, &attempt, deadline),
            };
            let error = match outcome {
                Ok(result) => return Ok(result),
                Err(error) => error,
            };
            if !matches!(
                error.status,
                Status::TransportError | Status::ProtocolError | Status::SessionExpired
            ) {
                return Err(error);
            }
            if self.session_failed(&session) {
                if listen.end_on_failure {
                    return Err(error);
                }
                self.core.log(
                    LogLevel::Info,
                    &format!(
                        "listen: the connection failed ({}); listening again once connect has made a new one",
                        error.message
                    ),
                );
                if self.core.options.reconnect.is_none() {
                    self.await_new_session(&session, opts, deadline)?;
                }
                pause = RETRY_FIRST;
                continue;
            }
            // The connection lives, only this listen's stream broke: listen again, unless the
            // server never took it (then it is the server's answer, not a drop).
            if !watch.acknowledged.load(Ordering::Acquire) {
                return Err(error);
            }
            self.core.log(
                LogLevel::Info,
                &format!(
                    "listen: the stream ended without the server ending the listen ({}); listening again in {} ms",
                    error.message,
                    pause.as_millis()
                ),
            );
            self.listen_pause(pause, opts, deadline)?;
            pause = (pause * 2).min(RETRY_MAX);
        }
    }

    fn listen_modern(
        &self,
        listen: &Listen,
        opts: &RequestOptions,
        watch: Arc<ListenWatch>,
    ) -> Result<Value> {
        let mut opts = opts.clone();
        if let Some(level) = &listen.log_level {
            opts.meta
                .get_or_insert_with(Map::new)
                .insert(LOG_LEVEL_KEY.into(), level.clone().into());
        }
        let params = json!({ "notifications": listen.filter() });
        super::operation::drive(self.core.send_raw(
            methods::LISTEN.into(),
            Some(Arc::new(params.into())),
            &opts,
            Leg::Call,
            Some(watch),
        ))
        .and_then(crate::protocol::reply::Reply::try_into_value)
    }

    /// The handshake era: subscribe, set the level, report what is honoured, then wait.
    fn listen_legacy(
        &self,
        session: &Arc<Session>,
        listen: &Listen,
        opts: &RequestOptions,
        deadline: Option<Instant>,
    ) -> Result<Value> {
        let capabilities = session
            .server_info
            .get("capabilities")
            .cloned()
            .unwrap_or_default();
        let offers = |kind: &str, feature: &str| capabilities[kind][feature] == true;
        let mut honoured = Map::new();
        for (wanted, kind, key) in [
            (listen.tools_list_changed, "tools", "toolsListChanged"),
            (listen.prompts_list_changed, "prompts", "promptsListChanged"),
            (
                listen.resources_list_changed,
                "resources",
                "resourcesListChanged",
            ),
        ] {
            if wanted && offers(kind, "listChanged") {
                honoured.insert(key.into(), true.into());
            }
        }
        let mut subscribed = Vec::new();
        let mut outcome = Ok(());
        if offers("resources", "subscribe") {
            for uri in &listen.resource_uris {
                match self.request(methods::SUBSCRIBE, Some(json!({ "uri": uri })), opts) {
                    Ok(_) => subscribed.push(uri.clone()),
                    Err(e) if e.status == Status::ServerError => self.core.log(
                        LogLevel::Warning,
                        &format!(
                            "listen: the server refused to subscribe to {uri}: {}",
                            e.message
                        ),
                    ),
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
        }
        if let (Ok(()), Some(level), true) = (
            &outcome,
            &listen.log_level,
            capabilities.get("logging").is_some(),
        ) {
            match self.request(
                methods::SET_LOGGING_LEVEL,
                Some(json!({ "level": level })),
                opts,
            ) {
                Ok(_) => {}
                Err(e) if e.status == Status::ServerError => self.core.log(
                    LogLevel::Warning,
                    &format!("listen: the server refused logging/setLevel: {}", e.message),
                ),
                Err(e) => outcome = Err(e),
            }
        }
        if !subscribed.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(subscribed));
        }
        let outcome = outcome.and_then(|()| {
            let ack = json!({ "notifications": Value::Object(honoured) });
            session
                .connection
                .inject_notification(ACKNOWLEDGED, Some(ack));
            self.wait_legacy_listen(session, opts, deadline)
        });
        unsubscribe_later(session, subscribed);
        outcome
    }

    /// Waits until the token, a close, the connection's failure or the deadline ends it.
    fn wait_legacy_listen(
        &self,
        session: &Arc<Session>,
        opts: &RequestOptions,
        deadline: Option<Instant>,
    ) -> Result<Value> {
        loop {
            let seen = self.core.changes.seen();
            self.check_listening(opts, deadline)?;
            if let Some(failure) = session.connection.failure() {
                return Err(failure);
            }
            if self.session_failed(session) {
                return Err(Error::new(
                    Status::SessionExpired,
                    "the server ended the session",
                ));
            }
            self.core.changes.wait(seen, deadline);
        }
    }

    /// Waits for `connect` to replace the failed `old` session by a live one.
    fn await_new_session(
        &self,
        old: &Arc<Session>,
        opts: &RequestOptions,
        deadline: Option<Instant>,
    ) -> Result<()> {
        loop {
            let seen = self.core.changes.seen();
            self.check_listening(opts, deadline)?;
            {
                let state = self.core.lock();
                if let Some(session) = &state.session {
                    if !Arc::ptr_eq(session, old) && session.connection.failure().is_none() {
                        return Ok(());
                    }
                }
            }
            self.core.changes.wait(seen, deadline);
        }
    }

    /// Pauses for `pause` unless the token, a close or the deadline ends the listen first.
    fn listen_pause(
        &self,
        pause: Duration,
        opts: &RequestOptions,
        deadline: Option<Instant>,
    ) -> Result<()> {
        let until = Instant::now() + pause;
        loop {
            let seen = self.core.changes.seen();
            self.check_listening(opts, deadline)?;
            if Instant::now() >= until {
                return Ok(());
            }
            let wake = deadline.map_or(until, |d| d.min(until));
            self.core.changes.wait(seen, Some(wake));
        }
    }

    /// Whether the listen must end now: the token, a close, or the deadline.
    fn check_listening(&self, opts: &RequestOptions, deadline: Option<Instant>) -> Result<()> {
        if let Some(token) = opts.cancellation.as_ref().filter(|t| t.is_cancelled()) {
            let reason = token.reason();
            let message = match &reason {
                Some(reason) => format!("listen cancelled: {reason}"),
                None => "listen cancelled".to_owned(),
            };
            return Err(Error {
                cancel_reason: reason,
                ..Error::new(Status::Cancelled, message)
            });
        }
        if self.core.lock().closed {
            return Err(closed_error());
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let ms = opts.timeout.unwrap_or_default().as_millis();
            let reason = format!("timed out after {ms} ms");
            return Err(Error {
                message: format!("listen {reason}"),
                cancel_reason: Some(reason),
                ..Error::new(Status::Timeout, "")
            });
        }
        Ok(())
    }

    /// The connection of `session` failed, or the client dropped it (the server ended it).
    fn session_failed(&self, session: &Arc<Session>) -> bool {
        if session.connection.failure().is_some() {
            return true;
        }
        let state = self.core.lock();
        !matches!(&state.session, Some(current) if Arc::ptr_eq(current, session))
    }
}

/// Unsubscribes a handshake-era listen's URIs on a thread of its own, so that ending the
/// listen never waits for the server. Errors are of no use to anyone here and are dropped.
fn unsubscribe_later(session: &Arc<Session>, uris: Vec<String>) {
    if uris.is_empty() || session.connection.failure().is_some() {
        return;
    }
    let connection = session.connection.clone();
    let _ = spawn(
        "mcpc-unsubscribe",
        move || {
            let opts = CallOptions {
                timeout: Some(UNSUBSCRIBE_TIMEOUT),
                cancel_on_wire: true,
                ..CallOptions::default()
            };
            for uri in uris {
                let params = json!({ "uri": uri });
                let _ = connection.call(
                    RequestBody::new(methods::UNSUBSCRIBE, Some(&params.into())),
                    &opts,
                );
            }
        },
        |_| {},
    );
}
