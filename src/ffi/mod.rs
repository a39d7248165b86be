//! The C ABI, and nothing else: one file per C object or family, each a thin translation to the
//! Rust client. Shared pieces: the panic boundary and handle freeing (`boundary`), C strings in
//! and out (`strings`), how option setters report errors (`setter`), and each request's C
//! arguments, read once for its blocking function and its constructor (`request_arguments`).
//!
//! Conventions (see include/mcpc.h): every name is `mcp_<object>_<verb>`; handles are opaque;
//! every `_new` has a `_free` that accepts NULL; every request returns an `mcp_result *` (never
//! NULL) that the caller frees; strings in are NUL-terminated UTF-8 and are checked; strings out
//! are owned by the object that returned them. No panic unwinds across this boundary.

#![allow(non_camel_case_types)]

mod boundary;
mod request_arguments;
mod setter;
mod strings;

// The header (include/mcpc.h) lists the functions in the order of these declarations, which is
// the order a newcomer learns them in: cbindgen follows source order. Each group's opening
// paragraph in the header comes from header_groups.rs at the crate root. The blank lines keep
// rustfmt from sorting the declarations.
mod status;

mod client;

mod client_options;

mod blocking_requests;

mod notify;

mod result;

mod cancellation;

mod request_options;

mod request_constructors;

mod completion_queue;

mod start;

mod callbacks;

mod handlers;

mod listen;

mod tasks;

mod auth_reply;

mod token_slot;

mod header_list;

mod credential_callbacks;

mod loopback;

mod transport;

mod trace;

pub use auth_reply::*;
pub use blocking_requests::*;
pub use callbacks::*;
pub use cancellation::*;
pub use client::*;
pub use client_options::*;
pub use completion_queue::*;
pub use credential_callbacks::*;
pub use handlers::*;
pub use header_list::*;
pub use listen::*;
pub use loopback::*;
pub use notify::*;
pub use request_constructors::*;
pub use request_options::*;
pub use result::*;
pub use start::*;
pub use status::*;
pub use tasks::*;
pub use token_slot::*;
pub use trace::*;
pub use transport::*;

use boundary::{free_handle, guard};
