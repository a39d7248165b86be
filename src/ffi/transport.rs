//! Custom transports written in C: `mcp_transport_vtable`, the client made over one, and the
//! vtable's adapter to the Rust `BlockingTransport` trait.

use super::boundary::{borrow, borrow_mut};
use super::callbacks::UserData;
use super::client::{client_options, mcp_client};
use super::client_options::mcp_client_options;
use super::guard;
use super::strings::optional_str;
use crate::client::{Client, ClientOptions};
use crate::error::{Error, Result};
use crate::transport::custom::BlockingTransport;
use std::ffi::{c_char, c_void, CString};

/// The send-boundary callback handed to `send_request`.
pub type mcp_on_sent = Option<unsafe extern "C" fn(sent_ctx: *mut c_void)>;

/// Where `send_request` puts the response (or why there is none).
pub struct mcp_transport_reply {
    response: Option<String>,
    error: Option<String>,
}

/// A transport of the host's own. The library calls:
/// - `send_request` on a library worker thread, one per request, several at once. It writes
///   `request_json` (one JSON-RPC request), calls `on_sent(sent_ctx)` once the bytes are on the
///   wire (at most once, and before returning), then waits for the response and gives it to
///   `mcp_transport_reply_set_response` before returning true. It returns false, after
///   `mcp_transport_reply_set_error`, if the request could not be sent or answered. A transport
///   that never calls `on_sent` still works: a cancel notice then waits until it returns.
/// - `send_notification` for notifications (such as `notifications/cancelled`) from the
///   library's shared I/O pool (threads named `mcpc-io`, one at a time per client); returns
///   false on failure.
/// - `close` once, from the thread that closes or frees the client. It must make every running
///   `send_request` return soon; the client waits for them 1 s at most
///   (`mcpc::limits::THREAD_WAIT_ON_CLOSE`), then lets them go: a call still running then
///   outlives close and free, and `userdata` must outlive it.
///
/// All three are required. Strings passed in are valid during the call only.
#[repr(C)]
pub struct mcp_transport_vtable {
    /// Sends one request and gives its response (see above).
    pub send_request: Option<
        unsafe extern "C" fn(
            userdata: *mut c_void,
            request_json: *const c_char,
            on_sent: mcp_on_sent,
            sent_ctx: *mut c_void,
            reply: *mut mcp_transport_reply,
        ) -> bool,
    >,
    /// Sends one notification.
    pub send_notification: Option<
        unsafe extern "C" fn(userdata: *mut c_void, notification_json: *const c_char) -> bool,
    >,
    /// Ends the transport; running `send_request` calls return soon.
    pub close: Option<unsafe extern "C" fn(userdata: *mut c_void)>,
}

type SendRequest = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    mcp_on_sent,
    *mut c_void,
    *mut mcp_transport_reply,
) -> bool;
type SendNotification = unsafe extern "C" fn(*mut c_void, *const c_char) -> bool;
type Close = unsafe extern "C" fn(*mut c_void);

/// A client over a transport of the host's own (see `mcp_transport_vtable`). The vtable is
/// copied; `userdata` is passed to every function in it and must stay valid until
/// `mcp_client_free` returns. Never returns NULL.
///
/// # Safety
/// `vtable` is NULL or points to a vtable; its functions follow the contract documented on it.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_new_custom(
    vtable: *const mcp_transport_vtable,
    userdata: *mut c_void,
    options: *const mcp_client_options,
) -> *mut mcp_client {
    mcp_client::make(|| {
        let transport = HostTransport::new(vtable, userdata)?;
        let client_options =
            client_options(options)?.map_or_else(ClientOptions::default, |o| o.client.clone());
        Ok(Client::custom(transport, client_options))
    })
}

/// Gives the response to a request (JSON text, copied). Returns false for NULL arguments or
/// text that is not UTF-8.
///
/// # Safety
/// `reply` is the pointer passed to `send_request`, during that call; `json` is NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_transport_reply_set_response(
    reply: *mut mcp_transport_reply,
    json: *const c_char,
) -> bool {
    guard(
        || false,
        || match (borrow_mut(reply), optional_str(json, "response")) {
            (Some(reply), Ok(Some(json))) => {
                reply.response = Some(json.to_owned());
                true
            }
            _ => false,
        },
    )
}

/// Says why a request failed (copied; invalid UTF-8 is replaced).
///
/// # Safety
/// `reply` is the pointer passed to `send_request`, during that call; `message` is NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_transport_reply_set_error(
    reply: *mut mcp_transport_reply,
    message: *const c_char,
) {
    guard(
        || (),
        || {
            if let Some(reply) = borrow_mut(reply) {
                reply.error = (!message.is_null()).then(|| {
                    std::ffi::CStr::from_ptr(message)
                        .to_string_lossy()
                        .into_owned()
                });
            }
        },
    )
}

pub(crate) struct HostTransport {
    send_request: SendRequest,
    send_notification: SendNotification,
    close: Close,
    userdata: UserData,
}

impl HostTransport {
    /// # Safety
    /// `vtable` is NULL or points to a vtable.
    pub(crate) unsafe fn new(
        vtable: *const mcp_transport_vtable,
        userdata: *mut c_void,
    ) -> Result<Self> {
        let vtable =
            borrow(vtable).ok_or_else(|| Error::invalid("transport vtable must not be NULL"))?;
        match (vtable.send_request, vtable.send_notification, vtable.close) {
            (Some(send_request), Some(send_notification), Some(close)) => Ok(HostTransport {
                send_request,
                send_notification,
                close,
                userdata: UserData(userdata),
            }),
            _ => Err(Error::invalid(
                "transport vtable: send_request, send_notification and close are all required",
            )),
        }
    }
}

/// Calls the Rust closure behind `sent_ctx`.
unsafe extern "C" fn on_sent_trampoline(sent_ctx: *mut c_void) {
    if let Some(on_sent) = sent_ctx.cast::<&mut dyn FnMut()>().as_mut() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(on_sent));
    }
}

impl BlockingTransport for HostTransport {
    fn round_trip(&self, request: &str, mut on_sent: &mut dyn FnMut()) -> Result<String> {
        let request =
            CString::new(request).map_err(|_| Error::protocol("request contains a NUL byte"))?;
        let mut reply = mcp_transport_reply {
            response: None,
            error: None,
        };
        let sent_ctx: *mut &mut dyn FnMut() = &mut on_sent;
        // SAFETY: the vtable's contract; `sent_ctx` and `reply` outlive the call.
        let ok = unsafe {
            (self.send_request)(
                self.userdata.0,
                request.as_ptr(),
                Some(on_sent_trampoline),
                sent_ctx.cast(),
                &mut reply,
            )
        };
        match (ok, reply.response) {
            (true, Some(response)) => Ok(response),
            (true, None) => Err(Error::protocol(
                "the transport returned true but set no response",
            )),
            (false, _) => {
                Err(Error::transport(reply.error.unwrap_or_else(|| {
                    "the transport failed to send the request".to_owned()
                })))
            }
        }
    }

    fn notify(&self, frame: &str) -> Result<()> {
        let frame =
            CString::new(frame).map_err(|_| Error::protocol("notification contains a NUL byte"))?;
        // SAFETY: the vtable's contract.
        let ok = unsafe { (self.send_notification)(self.userdata.0, frame.as_ptr()) };
        ok.then_some(())
            .ok_or_else(|| Error::transport("the transport failed to send a notification"))
    }

    fn close(&self) {
        // SAFETY: the vtable's contract.
        unsafe { (self.close)(self.userdata.0) }
    }
}
