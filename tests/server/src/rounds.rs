//! Multi round-trip requests (SEP-2322). Instead of sending the client
//! requests of its own mid-call, the server answers with an interim result,
//! `resultType: "input_required"`, listing what it needs (`inputRequests`) and
//! an opaque `requestState`. The client fulfils the requests and retries the
//! original request with `inputResponses` and that state added to its params.
//! Only result shapes are involved, so these work the same in both eras.

use serde_json::{json, Value};

use crate::tools::text_result;
use crate::{Reply, RpcError};

/// An interim result. Without `input_requests`, it only sheds load: the
/// client retries at once with the new state.
fn input_required(input_requests: Option<Value>, request_state: &str) -> Value {
    let mut result = json!({ "resultType": "input_required", "requestState": request_state });
    if let Some(input_requests) = input_requests {
        result["inputRequests"] = input_requests;
    }
    result
}

fn request_state(params: &Value) -> Option<&str> {
    params["requestState"].as_str()
}

fn has_responses(params: &Value) -> bool {
    !params["inputResponses"].is_null()
}

/// The client's response to our input request `key`, which a retry must carry.
fn input_response<'a>(params: &'a Value, key: &str) -> Result<&'a Value, RpcError> {
    params["inputResponses"]
        .get(key)
        .ok_or_else(|| RpcError::invalid_params(format!("missing inputResponses.{key}")))
}

fn bad_state() -> RpcError {
    RpcError::invalid_params("bad requestState")
}

/// Where a confirmation stands (the tool `confirm`, the prompt
/// `confirm_prompt` and the resource `test://confirm` share it).
pub enum Confirmation<'a> {
    /// First round: answer with this interim result.
    Ask(Value),
    /// The retry: the client's response to the question.
    Answered(&'a Value),
}

pub fn confirmation<'a>(params: &'a Value, question: &str) -> Result<Confirmation<'a>, RpcError> {
    if !has_responses(params) {
        let elicit = json!({
            "method": "elicitation/create",
            "params": {
                "message": question,
                "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } } },
            },
        });
        let interim = input_required(Some(json!({ "confirm": elicit })), "state-1");
        return Ok(Confirmation::Ask(interim));
    }
    let answer = input_response(params, "confirm")?;
    if request_state(params) != Some("state-1") {
        return Err(bad_state());
    }
    Ok(Confirmation::Answered(answer))
}

pub fn confirm(args: &Value, params: &Value) -> Reply {
    let question = args["question"].as_str().unwrap_or("Proceed?");
    Ok(match confirmation(params, question)? {
        Confirmation::Ask(interim) => interim,
        Confirmation::Answered(answer) => text_result(format!("confirmed: {answer}")),
    })
}

/// Two interim rounds, each asking something different, then the answer.
pub fn two_rounds(params: &Value) -> Reply {
    match request_state(params) {
        None if !has_responses(params) => {
            let ask = json!({ "a": { "method": "roots/list", "params": {} } });
            Ok(input_required(Some(ask), "r1"))
        }
        Some("r1") => {
            input_response(params, "a")?;
            let ask = json!({ "b": { "method": "elicitation/create", "params": { "message": "second" } } });
            Ok(input_required(Some(ask), "r2"))
        }
        Some("r2") => {
            input_response(params, "b")?;
            // Echoed whole, so tests see whether earlier rounds' responses came along.
            Ok(text_result(format!("done: {}", params["inputResponses"])))
        }
        _ => Err(bad_state()),
    }
}

/// Sheds load `legs` times: the states "leg-1", "leg-2"... come without any
/// input request, and the call carrying "leg-<legs>" gets the answer.
pub fn state_only(args: &Value, params: &Value) -> Reply {
    let legs = args["legs"].as_u64().unwrap_or(2);
    let leg = match request_state(params) {
        None => 0,
        Some(state) => state
            .strip_prefix("leg-")
            .and_then(|leg| leg.parse().ok())
            .filter(|leg| (1..=legs).contains(leg))
            .ok_or_else(bad_state)?,
    };
    if leg == legs {
        Ok(text_result("legs done"))
    } else {
        Ok(input_required(None, &format!("leg-{}", leg + 1)))
    }
}

/// Never satisfied, so that the client's cap on rounds can be tested.
pub fn always_input() -> Reply {
    let ask = json!({ "x": { "method": "elicitation/create", "params": { "message": "again" } } });
    Ok(input_required(Some(ask), "forever"))
}
