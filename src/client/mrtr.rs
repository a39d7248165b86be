//! Multi round-trip requests (SEP-2322): `tools/call`, `prompts/get` and `resources/read` may
//! answer `input_required`. We answer each input request through the host's handlers and send
//! the original params again, under a fresh id and the same token, with `inputResponses` and
//! the `requestState` echoed unchanged, until the result is final or the rounds run out.

use super::{Client, RequestOptions};
use crate::error::{Error, Result, Status};
use crate::handlers::ServerRequest;
use serde_json::{Map, Value};
use std::time::{Duration, Instant};

/// A state-only leg (load shedding) waits before retrying: 50 ms, doubling, at most 250 ms.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_millis(250);

pub(super) fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// INPUT_REQUIRED, carrying the interim result so the host can continue by hand.
pub(super) fn input_required(result: Value, message: String) -> Error {
    Error {
        data: Some(result),
        ..Error::new(Status::InputRequired, message)
    }
}

impl Client {
    pub(super) fn request_with_input(
        &self,
        method: &str,
        params: Value,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let started = Instant::now();
        let opts = &self.with_progress_token(opts);
        // The host may be continuing a round by hand.
        let mut leg = params.clone();
        if let Some(responses) = &opts.input_responses {
            leg["inputResponses"] = responses.clone();
        }
        if let Some(state) = &opts.request_state {
            leg["requestState"] = Value::from(state.as_str());
        }
        let mut rounds = 0;
        let mut backoff = FIRST_BACKOFF;
        loop {
            let result = self.request_raw(method, Some(leg), opts)?;
            if !is_input_required(&result) {
                return self.settle_task(method, result, opts, started);
            }
            rounds += 1;
            if rounds > self.options.input_required_max_rounds {
                let message = format!(
                    "{method}: still input_required after {} rounds",
                    self.options.input_required_max_rounds
                );
                return Err(input_required(result, message));
            }
            let requests = match result.get("inputRequests") {
                Some(Value::Object(requests)) => requests.clone(),
                None | Some(Value::Null) => Map::new(),
                Some(_) => {
                    return Err(Error::protocol(format!(
                        "{method}: inputRequests is not an object"
                    )))
                }
            };
            if requests.is_empty() {
                sleep_unless_cancelled(backoff, opts);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            } else {
                backoff = FIRST_BACKOFF;
            }
            let responses = match self.answer_inputs(method, &requests, opts) {
                Ok(responses) => responses,
                Err(message) => return Err(input_required(result, message)),
            };
            leg = params.clone();
            if !requests.is_empty() {
                leg["inputResponses"] = Value::Object(responses);
            }
            // Echoed byte for byte, and only when the server sent one.
            if let Some(state) = result.get("requestState") {
                leg["requestState"] = state.clone();
            }
        }
    }

    /// Runs the handler of each input request; the error says which one could not be answered.
    pub(super) fn answer_inputs(
        &self,
        method: &str,
        requests: &Map<String, Value>,
        opts: &RequestOptions,
    ) -> std::result::Result<Map<String, Value>, String> {
        // The handler sees the call's own token, so cancelling the call stops it too.
        let cancellation = opts.cancellation.clone().unwrap_or_default();
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
                cancellation: &cancellation,
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

/// Waits, waking early if the call's token is cancelled (the next leg then returns CANCELLED).
fn sleep_unless_cancelled(duration: Duration, opts: &RequestOptions) {
    let deadline = std::time::Instant::now() + duration;
    while std::time::Instant::now() < deadline {
        if opts.cancellation.as_ref().is_some_and(|t| t.is_cancelled()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
