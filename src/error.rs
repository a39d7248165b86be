//! Outcomes that are not a result: the status codes shared by Rust and C, and the error value.

use serde_json::Value;
use std::fmt;

/// The status of a finished call. The numbers are part of the C ABI: they are stable and a
/// number is never reused for another meaning.
// C knows it as `mcp_status`: cbindgen.toml renames it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// The call succeeded.
    Ok = 0,
    /// The server answered with a JSON-RPC error (code, message and data are on the result).
    ServerError = 1,
    /// The call was cancelled through its cancellation token.
    Cancelled = 2,
    /// The call's timeout passed; the server was told, as for a cancel.
    Timeout = 3,
    /// The connection failed: the process exited, a pipe broke, a write failed.
    TransportError = 4,
    /// The server sent something that breaks the protocol (bad frame, unsupported version...).
    ProtocolError = 5,
    /// The client was closed while the call was pending, or was already closed.
    Closed = 6,
    /// An argument was invalid: NULL, not UTF-8, malformed JSON, bad option.
    InvalidArgument = 7,
    /// An all-pages call passed the max-pages limit.
    PaginationLimit = 8,
    /// A request was made before `connect` succeeded.
    NotConnected = 9,
    /// A bug inside the library (a caught panic). Please report it.
    InternalError = 10,
    /// The server needs input (SEP-2322 `input_required`) that no handler gave. The result JSON
    /// is the server's interim result (`inputRequests`, `requestState`); answer it and call
    /// again with the input responses and request state in the request options.
    InputRequired = 11,
    /// The server no longer knows the HTTP session (a 404 to a request that carried its
    /// `Mcp-Session-Id`). The session is forgotten: connect a new client to start another.
    SessionExpired = 12,
    /// The request does not exist in the connection's protocol era (for example
    /// `logging/setLevel` on a 2026-07-28 connection). Nothing was sent. Also: https (or a TLS
    /// setting) in a library built without its `tls` feature.
    NotSupported = 13,
    /// The server refused the request's credentials (HTTP 401, or 403 for missing scopes) and
    /// no OAuth flow could get new ones (none configured, the person declined, the retry limit
    /// was reached, a check failed). The error data (`mcp_result_error_data`) holds the parsed
    /// challenge:
    /// `{"httpStatus":401,"wwwAuthenticate":...,"resourceMetadata":...,"scope":...,"error":...}`.
    Unauthorized = 14,
    /// The server needs the user to visit a URL first (JSON-RPC error -32042, URL-mode
    /// elicitation). The error data lists them: `elicitations[]`, each with its `url` and
    /// `elicitationId`; `notifications/elicitation/complete` says when one is done, and the
    /// call may then be made again.
    UrlElicitationRequired = 15,
}

impl Status {
    /// Every status, in the order of its number.
    pub const ALL: [Status; 16] = [
        Status::Ok,
        Status::ServerError,
        Status::Cancelled,
        Status::Timeout,
        Status::TransportError,
        Status::ProtocolError,
        Status::Closed,
        Status::InvalidArgument,
        Status::PaginationLimit,
        Status::NotConnected,
        Status::InternalError,
        Status::InputRequired,
        Status::SessionExpired,
        Status::NotSupported,
        Status::Unauthorized,
        Status::UrlElicitationRequired,
    ];

    /// The status with this number, if there is one.
    pub fn from_code(code: i32) -> Option<Status> {
        Status::ALL
            .into_iter()
            .find(|status| *status as i32 == code)
    }

    /// A stable, upper-case name, e.g. "CANCELLED".
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::ServerError => "SERVER_ERROR",
            Status::Cancelled => "CANCELLED",
            Status::Timeout => "TIMEOUT",
            Status::TransportError => "TRANSPORT_ERROR",
            Status::ProtocolError => "PROTOCOL_ERROR",
            Status::Closed => "CLOSED",
            Status::InvalidArgument => "INVALID_ARGUMENT",
            Status::PaginationLimit => "PAGINATION_LIMIT",
            Status::NotConnected => "NOT_CONNECTED",
            Status::InternalError => "INTERNAL_ERROR",
            Status::InputRequired => "INPUT_REQUIRED",
            Status::SessionExpired => "SESSION_EXPIRED",
            Status::NotSupported => "NOT_SUPPORTED",
            Status::Unauthorized => "UNAUTHORIZED",
            Status::UrlElicitationRequired => "URL_ELICITATION_REQUIRED",
        }
    }
}

/// Why a call did not produce a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub status: Status,
    /// Human-readable; for SERVER_ERROR this is the JSON-RPC error message.
    pub message: String,
    /// The JSON-RPC error code (SERVER_ERROR only).
    pub code: Option<i64>,
    /// The JSON-RPC error data (SERVER_ERROR only), when the server sent some.
    pub data: Option<Value>,
    /// The JSON-RPC id of the request this error belongs to, once one was sent.
    pub request_id: Option<i64>,
    /// The reason given to the cancel (CANCELLED and TIMEOUT).
    pub cancel_reason: Option<String>,
}

pub type Result<T> = std::result::Result<T, Error>;

/// The JSON-RPC error code of URLElicitationRequiredError.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
            code: None,
            data: None,
            request_id: None,
            cancel_reason: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Status::InvalidArgument, message)
    }

    pub fn protocol(message: impl Into<String>) -> Self {
        Self::new(Status::ProtocolError, message)
    }

    pub fn transport(message: impl Into<String>) -> Self {
        Self::new(Status::TransportError, message)
    }

    /// A JSON-RPC error object sent by the server. -32042 (URL elicitation required) has a
    /// status of its own; every other code is SERVER_ERROR.
    pub fn server(code: i64, message: String, data: Option<Value>) -> Self {
        let status = match code {
            URL_ELICITATION_REQUIRED => Status::UrlElicitationRequired,
            _ => Status::ServerError,
        };
        Error {
            code: Some(code),
            data,
            ..Self::new(status, message)
        }
    }

    pub fn with_request_id(mut self, id: Option<i64>) -> Self {
        if self.request_id.is_none() {
            self.request_id = id;
        }
        self
    }

    /// Prefixes the message with what was being done, e.g. "initialize: ...".
    pub fn context(mut self, what: &str) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)?;
        if let Some(code) = self.code {
            write!(f, " (code {code})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn every_status_is_listed_once_at_its_number() {
        for (number, status) in Status::ALL.into_iter().enumerate() {
            assert_eq!(status as usize, number);
            assert_eq!(Status::from_code(number as i32), Some(status));
        }
        assert_eq!(Status::from_code(-1), None);
        assert_eq!(Status::from_code(Status::ALL.len() as i32), None);
    }
}
