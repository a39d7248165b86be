//! Multi round-trip requests (SEP-2322): `tools/call`, `prompts/get` and `resources/read` may
//! answer `input_required`. We answer each input request through the host's handlers and send
//! the original params again, under a fresh id and the same token, with `inputResponses` and
//! the `requestState` echoed unchanged, until the result is final or the rounds run out.
//!
//! The request's timeout bounds the whole exchange, not each leg: its deadline is taken when the
//! call starts and every leg gets what is left of it (with `reset_timeout_on_progress`, each leg
//! keeps the timeout as a bound on silence and `max_total_timeout` bounds them all).

use super::operation::Step;
use super::{closed_error, ClientCore, RequestOptions};
use crate::cancellation::CancellationToken;
use crate::engine::timeout_error;
use crate::error::{Error, Status};
use crate::handlers::ServerRequest;
use crate::protocol::params::Params;
use crate::protocol::reply::Reply;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A state-only leg (load shedding) waits before retrying: 50 ms, doubling, at most 250 ms.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_millis(250);

/// Read without building the result's tree (see `protocol::reply`).
pub(super) fn is_input_required(result: &Reply) -> bool {
    result.result_type().and_then(Value::as_str) == Some("input_required")
}

/// INPUT_REQUIRED, carrying the interim result so the host can continue by hand.
pub(super) fn input_required(result: Value, message: String) -> Error {
    Error {
        data: Some(result),
        ..Error::new(Status::InputRequired, message)
    }
}

impl ClientCore {
    /// `method` with its `input_required` rounds answered (see the module docs).
    pub(super) fn with_input(
        self: &Arc<Self>,
        method: &'static str,
        params: Params,
        opts: &RequestOptions,
    ) -> Step {
        let params = Arc::new(params);
        // The host may be continuing a round by hand; else the first leg is the params as
        // they are, shared with the rounds that may follow.
        let leg = match (&opts.input_responses, &opts.request_state) {
            (None, None) => params.clone(),
            (responses, state) => {
                let mut leg = (*params).clone();
                if let Some(responses) = responses {
                    leg.tree["inputResponses"] = responses.clone();
                }
                if let Some(state) = state {
                    leg.tree["requestState"] = Value::from(state.as_str());
                }
                Arc::new(leg)
            }
        };
        let rounds = Rounds {
            method,
            params,
            deadline: Deadline::start(opts, self.options.timeout),
            opts: opts.clone(),
            done: 0,
            backoff: FIRST_BACKOFF,
        };
        self.leg(rounds, leg)
    }

    /// One leg, under what is left of the call's time, then the next round if the server still
    /// needs input.
    fn leg(self: &Arc<Self>, rounds: Rounds, leg: Arc<Params>) -> Step {
        // The first leg starts with the call: its own timeout is the call's.
        let opts = match rounds.done {
            0 => rounds.opts.clone(),
            _ => match rounds.deadline.leg_options(&rounds.opts) {
                Ok(opts) => opts,
                Err(error) => return Step::Done(Err(error)),
            },
        };
        let core = self.clone();
        let method = rounds.method;
        let reason = rounds.deadline.reason.clone();
        let next = move |result: crate::error::Result<_>| match result {
            Ok(result) if is_input_required(&result) => {
                // The input handlers are host code.
                Step::defer(move || core.next_round(rounds, result.into_value()))
            }
            // A later leg's timeout is the call's: say it as the call's.
            Err(e) if e.status == Status::Timeout && !reason.is_empty() => {
                Step::Done(Err(timeout_error(e.request_id, Some(reason))))
            }
            other => Step::Done(other),
        };
        self.raw_then(method.into(), Some(leg), &opts, next)
    }

    /// The server still needs input: answer it and send the next leg (or give up).
    fn next_round(self: Arc<Self>, mut rounds: Rounds, result: Value) -> Step {
        let core = self;
        let method = rounds.method;
        rounds.done += 1;
        if rounds.done > core.options.input_required_max_rounds {
            let message = format!(
                "{method}: still input_required after {} rounds",
                core.options.input_required_max_rounds
            );
            return Step::Done(Err(input_required(result, message)));
        }
        let requests = match result.get("inputRequests") {
            Some(Value::Object(requests)) => requests.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(_) => {
                return Step::Done(Err(Error::protocol(format!(
                    "{method}: inputRequests is not an object"
                ))))
            }
        };
        let responses = match core.answer_inputs(method, &requests, &rounds.opts) {
            Ok(responses) => responses,
            // A handler that gave up because the client closed: the call ends CLOSED.
            Err(_) if core.changes.is_closed() => return Step::Done(Err(closed_error())),
            Err(message) => return Step::Done(Err(input_required(result, message))),
        };
        let mut leg = (*rounds.params).clone();
        if !requests.is_empty() {
            leg.tree["inputResponses"] = Value::Object(responses);
        }
        // Echoed byte for byte, and only when the server sent one.
        if let Some(state) = result.get("requestState") {
            leg.tree["requestState"] = state.clone();
        }
        if !requests.is_empty() {
            rounds.backoff = FIRST_BACKOFF;
            return core.leg(rounds, Arc::new(leg));
        }
        // A state-only leg (load shedding) waits before retrying, never past the call's end.
        let until = rounds.deadline.clip(Instant::now() + rounds.backoff);
        rounds.backoff = (rounds.backoff * 2).min(MAX_BACKOFF);
        Step::Pause {
            until,
            cancellation: rounds.opts.cancellation.clone(),
            changes: core.changes.clone(),
            then: Box::new(move || core.leg(rounds, Arc::new(leg))),
        }
    }

    /// Runs the handler of each input request (on this thread, which holds no lock of ours);
    /// the error says which one could not be answered.
    pub(super) fn answer_inputs(
        &self,
        method: &str,
        requests: &Map<String, Value>,
        opts: &RequestOptions,
    ) -> std::result::Result<Map<String, Value>, String> {
        // The handler's token: the call's cancel and the client's close both cancel it (close
        // never cancels the host's own token), so a handler waiting on a person hears of either.
        let cancellation = CancellationToken::new();
        let call_cancel = opts.cancellation.as_ref().map(|call| {
            let handler = cancellation.clone();
            let hook = call.on_cancel(move |reason| {
                handler.cancel(reason);
            });
            (call, hook)
        });
        let _on_close = self.changes.cancel_on_close(&cancellation);
        let answered = self.run_input_handlers(method, requests, &cancellation);
        if let Some((call, Some(hook))) = call_cancel {
            call.off_cancel(hook);
        }
        answered
    }

    fn run_input_handlers(
        &self,
        method: &str,
        requests: &Map<String, Value>,
        cancellation: &CancellationToken,
    ) -> std::result::Result<Map<String, Value>, String> {
        let mut responses = Map::new();
        for (key, request) in requests {
            let wanted = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let Some(handler) = self.options.callbacks.request_handlers.get(wanted) else {
                return Err(format!("{method}: the server asked for {wanted:?} input (key {key:?}) and no handler is set for it"));
            };
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            let request = ServerRequest {
                method: wanted,
                params: &params,
                cancellation,
            };
            // Through the gate, like every host callback: close waits for it (within its
            // bound) and none starts once the client is closed.
            let Some(answered) = self.gate.run(|| handler(&request)) else {
                return Err(format!("{method}: the client is closed"));
            };
            match answered {
                Ok(answer) => {
                    responses.insert(key.clone(), answer);
                }
                Err(e) => {
                    return Err(format!(
                        "{method}: the {wanted} handler failed: {} ({})",
                        e.message, e.code
                    ))
                }
            }
        }
        Ok(responses)
    }
}

/// Where an `input_required` exchange stands.
struct Rounds {
    method: &'static str,
    /// The original params, sent again each round.
    params: Arc<Params>,
    opts: RequestOptions,
    deadline: Deadline,
    done: u32,
    backoff: Duration,
}

/// When the whole exchange ends: its start plus the request's timeout (unless progress restarts
/// it), or plus its `max_total_timeout`, whichever comes first.
struct Deadline {
    at: Option<Instant>,
    /// The timeout restarts on progress: each leg keeps it, and `at` is the maximum's.
    per_leg_timeout: bool,
    /// What the timeout message names.
    reason: String,
}

impl Deadline {
    fn start(opts: &RequestOptions, client_timeout: Option<Duration>) -> Deadline {
        let start = Instant::now();
        let timeout = match opts.timeout.or(client_timeout) {
            Some(Duration::ZERO) => None,
            other => other,
        };
        let per_leg_timeout = opts.reset_timeout_on_progress;
        let by_timeout = timeout
            .filter(|_| !per_leg_timeout)
            .and_then(|t| start.checked_add(t));
        let by_max = opts.max_total_timeout.and_then(|t| start.checked_add(t));
        let (at, reason) = match (by_timeout, by_max) {
            (Some(t), Some(m)) if m < t => (Some(m), exceeded(opts.max_total_timeout)),
            (Some(t), _) => (Some(t), timed_out(timeout)),
            (None, Some(m)) => (Some(m), exceeded(opts.max_total_timeout)),
            (None, None) => (None, String::new()),
        };
        Deadline {
            at,
            per_leg_timeout,
            reason,
        }
    }

    /// The options of the next leg: the call's, with what is left of its time; TIMEOUT when
    /// nothing is.
    fn leg_options(&self, opts: &RequestOptions) -> Result<RequestOptions, Error> {
        let Some(at) = self.at else {
            return Ok(opts.clone());
        };
        let left = match at.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => left,
            _ => return Err(timeout_error(None, Some(self.reason.clone()))),
        };
        let mut leg = opts.clone();
        match self.per_leg_timeout {
            true => leg.max_total_timeout = Some(left),
            false => leg.timeout = Some(left),
        }
        Ok(leg)
    }

    /// `until`, or the call's end if that comes first.
    fn clip(&self, until: Instant) -> Instant {
        self.at.map_or(until, |at| at.min(until))
    }
}

fn timed_out(timeout: Option<Duration>) -> String {
    format!(
        "timed out after {} ms",
        timeout.unwrap_or_default().as_millis()
    )
}

fn exceeded(max: Option<Duration>) -> String {
    format!(
        "exceeded the maximum of {} ms",
        max.unwrap_or_default().as_millis()
    )
}
