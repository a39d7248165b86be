//! Multi round-trip requests (SEP-2322): `tools/call`, `prompts/get` and `resources/read` may
//! answer `input_required`. We answer each input request through the host's handlers and send
//! the original params again, under a fresh id and the same token, with `inputResponses` and
//! the `requestState` echoed unchanged, until the result is final or the rounds run out.

use super::operation::{on_ok, Step};
use super::{closed_error, ClientCore, RequestOptions};
use crate::cancellation::CancellationToken;
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
            opts: opts.clone(),
            done: 0,
            backoff: FIRST_BACKOFF,
        };
        self.leg(rounds, leg, opts)
    }

    /// One leg, then the next round if the server still needs input. `opts` are the rounds'
    /// own (borrowed apart, as `rounds` moves into the continuation).
    fn leg(self: &Arc<Self>, rounds: Rounds, leg: Arc<Params>, opts: &RequestOptions) -> Step {
        let core = self.clone();
        let method = rounds.method;
        let next = on_ok(move |result| match is_input_required(&result) {
            false => Step::Done(Ok(result)),
            // The input handlers are host code.
            true => Step::defer(move || core.next_round(rounds, result.into_value())),
        });
        self.raw_then(method.into(), Some(leg), opts, next)
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
            let opts = rounds.opts.clone();
            return core.leg(rounds, Arc::new(leg), &opts);
        }
        // A state-only leg (load shedding) waits before retrying.
        let until = Instant::now() + rounds.backoff;
        rounds.backoff = (rounds.backoff * 2).min(MAX_BACKOFF);
        Step::Pause {
            until,
            cancellation: rounds.opts.cancellation.clone(),
            changes: core.changes.clone(),
            then: Box::new(move || {
                let opts = rounds.opts.clone();
                core.leg(rounds, Arc::new(leg), &opts)
            }),
        }
    }

    /// Runs the handler of each input request; the error says which one could not be answered.
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
            match handler(&request) {
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
    done: u32,
    backoff: Duration,
}
