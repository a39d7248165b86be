//! Requests as operations: one description of what a request does, run either blocking on the
//! caller's thread or started without blocking, on the same engine path.
//!
//! Top-down: a [`Request`] (a value naming one MCP request and its arguments, `request.rs`)
//! becomes a [`Step`] (`request_step`, the one place each request is carried out), a small
//! state machine: send this JSON-RPC request, then decide what comes next from its result
//! (`Step::Send`); wait a little (`Step::Pause`, between `input_required` rounds); run host
//! code (`Step::Defer`: input handlers, the library log); or the final result (`Step::Done`).
//! A request of several round trips (a version retry, `input_required` rounds, an all-pages
//! walk) is a chain of steps built with [`Step::and_then`]. Two drivers run a chain:
//! - [`drive`] (the blocking API): each `Send` is `Connection::start` then `Started::wait` on
//!   the caller's thread, which may read its own response (no thread hand-off);
//! - [`drive_async`] ([`Client::start`]): each `Send` is `Connection::start` with the call
//!   watched by the client's completion thread (`engine::completer`), whose continuation runs
//!   the next step there; the final result goes to the host's completion. For a completion
//!   queue the continuation runs on the host's thread instead, in the pop that meets the
//!   answered call, and hands every step but the last to the completion thread (see
//!   [`Deliver`] and `completer::Finish`).
//!
//! Both end each call through `Started::finish`, so the cancellation invariants, timeouts and
//! the result mapping are the same code. A long-lived call (a task's poll loop, a listen) fits
//! the same shape: a `Send` whose continuation returns a `Pause` then the next `Send`, until a
//! `Done`, holding no thread while it waits.

use super::changes::Changes;
use super::request::{Arguments, Request};
use super::{Client, ClientCore, RequestOptions};
use crate::cancellation::CancellationToken;
use crate::engine::completer::{self, Completer, Finish};
use crate::engine::{CallOptions, Connection, RequestBody};
use crate::error::{Error, Result};
use crate::protocol::envelope::Envelope;
use crate::protocol::params::Params;
use crate::protocol::reply::Reply;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

/// A request's method name: one of `protocol::methods` borrowed, or a host's own (a request
/// by name) owned. Every call passes its method down several layers: a constant is never copied.
pub(crate) type Method = Cow<'static, str>;

/// What an operation does next. See the module docs.
pub(crate) enum Step {
    Send {
        connection: Arc<Connection>,
        method: Method,
        /// Shared, so a retry of the same request (another protocol version) needs no copy.
        params: Option<Arc<Params>>,
        /// Modern era: stamped into `params._meta` as the frame is encoded.
        envelope: Option<Envelope>,
        call: CallOptions,
        then: Box<dyn FnOnce(Result<Reply>) -> Step + Send>,
    },
    Pause {
        until: Instant,
        /// Ends the pause early (the next request then ends CANCELLED at once).
        cancellation: Option<CancellationToken>,
        /// The client's close ends a blocking pause early too (the next request then ends
        /// CLOSED at once); a started one is ended by the completer's close.
        changes: Arc<Changes>,
        then: Box<dyn FnOnce() -> Step + Send>,
    },
    /// Host code ahead (an input handler, the library log): [`drive`] runs it on the caller's
    /// thread, [`drive_async`] on the completion thread, never on the thread that routed a
    /// response (see `engine::completer::inline`).
    Defer(Box<dyn FnOnce() -> Step + Send>),
    /// Work that blocks its thread for a while (a task's poll loop, `tasks`): [`drive`] runs it
    /// on the caller's thread, [`drive_async`] on a thread of its own, so the completion thread
    /// never waits on it.
    Blocking {
        job: Box<dyn FnOnce() -> Result<Reply> + Send>,
        then: Box<dyn FnOnce(Result<Reply>) -> Step + Send>,
    },
    Done(Result<Reply>),
}

impl Step {
    /// Sends one request; its result is the step's result.
    pub(crate) fn send(
        connection: &Arc<Connection>,
        method: Method,
        params: Option<Arc<Params>>,
        envelope: Option<Envelope>,
        call: CallOptions,
    ) -> Step {
        Step::Send {
            connection: connection.clone(),
            method,
            params,
            envelope,
            call,
            then: Box::new(Step::Done),
        }
    }

    /// Runs `job` where it may block (see `Step::Blocking`); its result is the step's result.
    pub(crate) fn blocking(job: impl FnOnce() -> Result<Value> + Send + 'static) -> Step {
        Step::Blocking {
            job: Box::new(move || job().map(Reply::from)),
            then: Box::new(Step::Done),
        }
    }

    /// Runs `then` where host code may run (see `Step::Defer`).
    pub(crate) fn defer(then: impl FnOnce() -> Step + Send + 'static) -> Step {
        Step::Defer(Box::new(then))
    }

    /// This step's chain, then `next` with its result.
    pub(crate) fn and_then(
        self,
        next: impl FnOnce(Result<Reply>) -> Step + Send + 'static,
    ) -> Step {
        match self {
            Step::Done(result) => next(result),
            Step::Send {
                connection,
                method,
                params,
                envelope,
                call,
                then,
            } => Step::Send {
                connection,
                method,
                params,
                envelope,
                call,
                then: Box::new(move |result| then(result).and_then(next)),
            },
            Step::Pause {
                until,
                cancellation,
                changes,
                then,
            } => Step::Pause {
                until,
                cancellation,
                changes,
                then: Box::new(move || then().and_then(next)),
            },
            Step::Defer(then) => Step::Defer(Box::new(move || then().and_then(next))),
            Step::Blocking { job, then } => Step::Blocking {
                job,
                then: Box::new(move |result| then(result).and_then(next)),
            },
        }
    }

    /// As `and_then`, for a successful result only; an error ends the chain.
    pub(crate) fn map_ok(self, next: impl FnOnce(Reply) -> Step + Send + 'static) -> Step {
        self.and_then(on_ok(next))
    }
}

/// A continuation that runs `next` with a successful result; an error ends the chain.
pub(crate) fn on_ok(
    next: impl FnOnce(Reply) -> Step + Send + 'static,
) -> impl FnOnce(Result<Reply>) -> Step + Send + 'static {
    |result| match result {
        Ok(value) => next(value),
        Err(error) => Step::Done(Err(error)),
    }
}

/// Runs a chain on this thread, blocking until its result.
pub(crate) fn drive(mut step: Step) -> Result<Reply> {
    loop {
        step = match step {
            Step::Done(result) => return result,
            Step::Send {
                connection,
                method,
                params,
                envelope,
                call,
                then,
            } => then(
                connection
                    .start(
                        RequestBody::new(&method, params.as_deref()).stamped(envelope.as_ref()),
                        call,
                        None,
                    )
                    .wait(&connection),
            ),
            Step::Pause {
                until,
                cancellation,
                changes,
                then,
            } => {
                changes.pause(until, cancellation.as_ref());
                then()
            }
            Step::Defer(then) => then(),
            Step::Blocking { job, then } => then(job()),
        }
    }
}

/// Where a started operation's result goes: `done`, kept unboxed inside the chain's
/// continuations (one allocation fewer per call than a box of its own).
pub(crate) struct Deliver<D> {
    pub done: D,
    /// Where each call's continuation runs (see `completer::Finish`): away from the completion
    /// thread when `done` neither blocks nor calls the host (it pushes to a completion queue),
    /// saving a hand-off to that thread.
    pub finish: Finish,
}

/// Runs a chain without blocking: each request's continuation runs on the completion thread
/// (or, for a `deliver` that may run anywhere, where its `finish` says, inside
/// `completer::inline`), and `deliver` gets the result there.
pub(crate) fn drive_async<D>(completer: &Completer, step: Step, deliver: Deliver<D>)
where
    D: FnOnce(Result<Reply>) + Send + 'static,
{
    if completer::inline() && !matches!(step, Step::Done(_)) {
        // The next request, a pause or host code: not on the thread that reads the transport.
        let next = completer.clone();
        return completer.post(Box::new(move || drive_async(&next, step, deliver)));
    }
    match step {
        Step::Done(result) if deliver.finish.anywhere() && completer::inline() => {
            (deliver.done)(result)
        }
        Step::Done(result) => completer.run(Box::new(move || (deliver.done)(result))),
        Step::Send {
            connection,
            method,
            params,
            envelope,
            call,
            then,
        } => {
            let next = completer.clone();
            let finish = deliver.finish.clone();
            completer.call(
                &connection,
                RequestBody::new(&method, params.as_deref()).stamped(envelope.as_ref()),
                call,
                finish,
                Box::new(move |result| drive_async(&next, then(result), deliver)),
            );
        }
        Step::Pause {
            until,
            cancellation,
            changes: _,
            then,
        } => {
            let next = completer.clone();
            let job = Box::new(move || drive_async(&next, then(), deliver));
            completer.after(until, cancellation.as_ref(), job);
        }
        Step::Defer(then) => {
            let next = completer.clone();
            completer.run(Box::new(move || drive_async(&next, then(), deliver)));
        }
        Step::Blocking { job, then } => {
            // The outcome is delivered whatever happens to the thread: a panic in `job` is its
            // error, and a thread that cannot start is the operation's error.
            let deliver = Arc::new(std::sync::Mutex::new(Some((then, deliver))));
            let finish = {
                let (completer, deliver) = (completer.clone(), deliver.clone());
                move |result: Result<Reply>| {
                    if let Some((then, deliver)) = crate::sync::lock(&deliver).take() {
                        let next = completer.clone();
                        completer.run(Box::new(move || drive_async(&next, then(result), deliver)));
                    }
                }
            };
            let on_panic = {
                let finish = finish.clone();
                move |error| finish(Err(error))
            };
            if let Err(error) = crate::sync::spawn("mcpc-task", move || finish(job()), on_panic) {
                if let Some((then, deliver)) = crate::sync::lock(&deliver).take() {
                    let next = completer.clone();
                    completer.run(Box::new(move || {
                        drive_async(&next, then(Err(error)), deliver)
                    }));
                }
            }
        }
    }
}

impl Client {
    /// Runs `request` on this thread until its outcome: what every blocking request method
    /// does.
    pub fn run(&self, request: Request, opts: &RequestOptions) -> Result<Value> {
        self.run_reply(request, opts)
            .and_then(Reply::try_into_value)
    }

    /// As `run`, the result kept as the server's text where it can be (the C API's form).
    pub(crate) fn run_reply(&self, request: Request, opts: &RequestOptions) -> Result<Reply> {
        drive(self.core.step_for(request, opts))
    }

    /// Starts `request` without blocking. `done` gets its outcome, exactly once, on the
    /// client's completion thread (a thread of the library's completion pool, `mcpc-complete`,
    /// shared by every client; one client's completions run one at a time, in order).
    /// The options' token cancels it as it cancels a blocking call (at once, CANCELLED, the
    /// server told only if the request reached the wire); timeouts apply as for blocking calls.
    ///
    /// Fails (and `done` is never called) only once the client is closed. `close` (and
    /// dropping the client) ends every started request with CLOSED and returns only once each
    /// `done` has run, or 2 s have passed (a `done` that does not return); no `done` starts
    /// after that. `done` may make requests, start others, cancel and close the client.
    ///
    /// The request's first message is written on this thread; later ones (next pages,
    /// `input_required` rounds) on the completion thread, which also runs the input handlers.
    pub fn start(
        &self,
        request: Request,
        opts: &RequestOptions,
        done: impl FnOnce(Result<Value>) + Send + 'static,
    ) -> Result<()> {
        self.start_checked(Ok(request), opts, Finish::CompletionThread, move |result| {
            done(result.and_then(Reply::try_into_value))
        })
    }

    /// As `start`, for a request that may already have failed its checks (the C API's
    /// arguments): the failure is its completion. `finish`: where the calls' continuations run;
    /// anything but the completion thread only when `done` neither blocks nor calls the host
    /// (see [`Deliver`]).
    pub(crate) fn start_checked(
        &self,
        request: Result<Request>,
        opts: &RequestOptions,
        finish: Finish,
        done: impl FnOnce(Result<Reply>) + Send + 'static,
    ) -> Result<()> {
        let ticket = self.core.completer.admit()?;
        let gate = self.core.gate.clone();
        let step = match request {
            Ok(request) => self.core.step_for(request, opts),
            Err(error) => Step::Done(Err(error)),
        };
        let done = move |result| {
            // Entered before the ticket goes back, so a close that saw the ticket back waits
            // for this callback (or it never starts, once the gate is shut).
            let entered = gate.enter();
            drop(ticket);
            if entered.is_some() {
                done(result);
            }
        };
        drive_async(&self.core.completer, step, Deliver { done, finish });
        Ok(())
    }

    /// Starts each of `starts` in order as `start_checked` does, their first messages leaving
    /// together (one write on stdio, not one per request). Returns how many were started and,
    /// when that is not all of them, why the next could not be (the client is closed): the
    /// rest were not started and their `done` is never called.
    pub(crate) fn start_checked_together<'o, D>(
        &self,
        starts: impl IntoIterator<Item = (Result<Request>, &'o RequestOptions, D)>,
        finish: Finish,
    ) -> (usize, Result<()>)
    where
        D: FnOnce(Result<Reply>) + Send + 'static,
    {
        crate::transport::coalesce_requests(|| {
            let mut started = 0;
            for (request, opts, done) in starts {
                if let Err(error) = self.start_checked(request, opts, finish.clone(), done) {
                    return (started, Err(error));
                }
                started += 1;
            }
            (started, Ok(()))
        })
    }
}

impl ClientCore {
    /// The chain that carries out `request`.
    pub(super) fn step_for(self: &Arc<Self>, request: Request, opts: &RequestOptions) -> Step {
        if !self.options.tasks {
            return self.request_step(request, opts, false);
        }
        // With the tasks extension, every leg of the call (input rounds, the task's status)
        // reports under one progress token, and a task result is polled to its end.
        let started = Instant::now();
        let opts = self.with_progress_token(opts);
        let core = self.clone();
        // A 2025-11-25 call made task-augmented is answered with `{task: {...}}`.
        let legacy_task =
            matches!(&request, Request::CallTool { name, .. } if self.legacy_task_tool(name));
        self.request_step(request, &opts, legacy_task)
            .map_ok(move |result| {
                let is_task = match legacy_task {
                    true => result.get("task").is_some_and(Value::is_object),
                    false => result.result_type().and_then(Value::as_str) == Some("task"),
                };
                match is_task && !opts.return_task {
                    true => Step::blocking(move || {
                        let task = match legacy_task {
                            true => result.into_value()["task"].take(),
                            false => result.into_value(),
                        };
                        core.settle_task(crate::protocol::methods::TOOLS_CALL, task, &opts, started)
                    }),
                    false => Step::Done(Ok(result)),
                }
            })
    }

    /// The chain of one request, a task result left as it is. `legacy_task`: a `tools/call`
    /// goes out task-augmented (2025-11-25 experimental tasks).
    fn request_step(
        self: &Arc<Self>,
        request: Request,
        opts: &RequestOptions,
        legacy_task: bool,
    ) -> Step {
        use crate::protocol::methods;
        let done = |result| Step::Done(result);
        match request {
            Request::Ping => self.request(methods::PING, None, opts),
            Request::Discover => self.request(methods::DISCOVER, None, opts),
            Request::CallTool { name, arguments } => {
                match named_params(name, arguments, "tool arguments") {
                    Ok(mut params) => {
                        if legacy_task {
                            params.tree["task"] = serde_json::json!({});
                        }
                        self.with_input(methods::TOOLS_CALL, params, opts)
                    }
                    Err(e) => done(Err(e)),
                }
            }
            Request::ReadResource { uri } => self.with_input(
                methods::RESOURCES_READ,
                serde_json::json!({ "uri": uri }).into(),
                opts,
            ),
            Request::GetPrompt { name, arguments } => {
                match named_params(name, arguments, "prompt arguments") {
                    Ok(params) => self.with_input(methods::PROMPTS_GET, params, opts),
                    Err(e) => done(Err(e)),
                }
            }
            Request::Complete {
                reference,
                argument,
                context,
            } => self.complete_step(reference, argument, context, opts),
            Request::SetLoggingLevel { level } => self.handshake_only(
                methods::SET_LOGGING_LEVEL,
                serde_json::json!({ "level": level }),
                opts,
            ),
            Request::SubscribeResource { uri } => {
                self.handshake_only(methods::SUBSCRIBE, serde_json::json!({ "uri": uri }), opts)
            }
            Request::UnsubscribeResource { uri } => self.handshake_only(
                methods::UNSUBSCRIBE,
                serde_json::json!({ "uri": uri }),
                opts,
            ),
            Request::ListTools { cursor } => self.list_tools_page(cursor.as_deref(), opts),
            Request::ListResources { cursor } => {
                self.list_page(methods::RESOURCES_LIST, cursor.as_deref(), opts)
            }
            Request::ListResourceTemplates { cursor } => {
                self.list_page(methods::RESOURCE_TEMPLATES_LIST, cursor.as_deref(), opts)
            }
            Request::ListPrompts { cursor } => {
                self.list_page(methods::PROMPTS_LIST, cursor.as_deref(), opts)
            }
            Request::Tools => self.all_tools(opts),
            Request::Resources => self.all_pages(methods::RESOURCES_LIST, "resources", opts),
            Request::ResourceTemplates => {
                self.all_pages(methods::RESOURCE_TEMPLATES_LIST, "resourceTemplates", opts)
            }
            Request::Prompts => self.all_pages(methods::PROMPTS_LIST, "prompts", opts),
            Request::Other { method, params } => self.request(method, params, opts),
        }
    }
}

/// `{"name": name, "arguments": arguments}`, the arguments left out when absent.
fn named_params(name: String, arguments: Option<Arguments>, what: &str) -> Result<Params> {
    let mut params = Params::named(name);
    match arguments {
        None => Ok(params),
        Some(Arguments::Value(arguments)) if arguments.is_object() => {
            params.tree["arguments"] = arguments;
            Ok(params)
        }
        Some(Arguments::Json(text)) => Ok(params.and_text("arguments", text)),
        Some(_) => Err(Error::invalid(format!("{what} must be a JSON object"))),
    }
}
