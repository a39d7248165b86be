//! One method per MCP request (each `run` of a [`Request`]), and the steps they are made of:
//! one request in the connection's era (with its version retry), `input_required` checks, one
//! list page, the all-pages walks.

use super::connect::{supported_versions, UNSUPPORTED_VERSION};
use super::input_required::{input_required, is_input_required};
use super::lazy::Route;
use super::operation::{on_ok, Method, Step};
use super::request::{Arguments, Request};
use super::tasks::Leg;
use super::{Client, ClientCore, RequestOptions};
use crate::engine::router::ListenWatch;
use crate::engine::CallOptions;
use crate::error::{Error, Result, Status};
use crate::handlers::LogLevel;
use crate::protocol::mcp_header;
use crate::protocol::methods;
use crate::protocol::params::Params;
use crate::protocol::reply::Reply;
use crate::protocol::versions;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Client {
    /// Sends any request and returns its `result`. An `input_required` result ends with
    /// INPUT_REQUIRED here; `call_tool`, `get_prompt` and `read_resource` answer it through
    /// the input handlers.
    pub fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let method = method.to_owned();
        self.run(Request::Other { method, params }, opts)
    }

    pub fn ping(&self, opts: &RequestOptions) -> Result<Value> {
        self.run(Request::Ping, opts)
    }

    /// `server/discover` (the 2026-07-28 era's description of the server). Servers of the
    /// handshake era answer it with a -32601 error (SERVER_ERROR).
    pub fn discover(&self, opts: &RequestOptions) -> Result<Value> {
        self.run(Request::Discover, opts)
    }

    /// `tools/call`. `arguments`, when given, must be a JSON object. Returns the tool's result
    /// (`content`, `structuredContent`, `isError`...).
    pub fn call_tool(
        &self,
        name: &str,
        arguments: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let name = name.to_owned();
        let arguments = arguments.map(Arguments::from);
        self.run(Request::CallTool { name, arguments }, opts)
    }

    pub fn read_resource(&self, uri: &str, opts: &RequestOptions) -> Result<Value> {
        let uri = uri.to_owned();
        self.run(Request::ReadResource { uri }, opts)
    }

    /// `prompts/get`. `arguments`, when given, must be a JSON object of strings.
    pub fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let name = name.to_owned();
        let arguments = arguments.map(Arguments::from);
        self.run(Request::GetPrompt { name, arguments }, opts)
    }

    /// `completion/complete`. `reference` is e.g. `{"type":"ref/prompt","name":"greet"}` and
    /// `argument` is `{"name": ..., "value": ...}`.
    pub fn complete(
        &self,
        reference: Value,
        argument: Value,
        context: Option<Value>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let request = Request::Complete {
            reference,
            argument,
            context,
        };
        self.run(request, opts)
    }

    /// `logging/setLevel` (handshake era only): the least severe level of
    /// `notifications/message` the server should send.
    pub fn set_logging_level(&self, level: &str, opts: &RequestOptions) -> Result<Value> {
        let level = level.to_owned();
        self.run(Request::SetLoggingLevel { level }, opts)
    }

    /// `resources/subscribe` (handshake era only): ask for `notifications/resources/updated`.
    pub fn subscribe_resource(&self, uri: &str, opts: &RequestOptions) -> Result<Value> {
        let uri = uri.to_owned();
        self.run(Request::SubscribeResource { uri }, opts)
    }

    /// `resources/unsubscribe` (handshake era only).
    pub fn unsubscribe_resource(&self, uri: &str, opts: &RequestOptions) -> Result<Value> {
        let uri = uri.to_owned();
        self.run(Request::UnsubscribeResource { uri }, opts)
    }

    /// One page of `tools/list`; its `nextCursor` says where the next page starts.
    pub fn list_tools(&self, cursor: Option<&str>, opts: &RequestOptions) -> Result<Value> {
        let cursor = cursor.map(str::to_owned);
        self.run(Request::ListTools { cursor }, opts)
    }

    pub fn list_resources(&self, cursor: Option<&str>, opts: &RequestOptions) -> Result<Value> {
        let cursor = cursor.map(str::to_owned);
        self.run(Request::ListResources { cursor }, opts)
    }

    pub fn list_resource_templates(
        &self,
        cursor: Option<&str>,
        opts: &RequestOptions,
    ) -> Result<Value> {
        let cursor = cursor.map(str::to_owned);
        self.run(Request::ListResourceTemplates { cursor }, opts)
    }

    pub fn list_prompts(&self, cursor: Option<&str>, opts: &RequestOptions) -> Result<Value> {
        let cursor = cursor.map(str::to_owned);
        self.run(Request::ListPrompts { cursor }, opts)
    }

    /// Every tool, over all pages.
    pub fn tools(&self, opts: &RequestOptions) -> Result<Vec<Value>> {
        items(self.run(Request::Tools, opts)?, "tools")
    }

    pub fn resources(&self, opts: &RequestOptions) -> Result<Vec<Value>> {
        items(self.run(Request::Resources, opts)?, "resources")
    }

    pub fn resource_templates(&self, opts: &RequestOptions) -> Result<Vec<Value>> {
        items(
            self.run(Request::ResourceTemplates, opts)?,
            "resourceTemplates",
        )
    }

    pub fn prompts(&self, opts: &RequestOptions) -> Result<Vec<Value>> {
        items(self.run(Request::Prompts, opts)?, "prompts")
    }
}

/// The list an all-pages walk gathered under `key`.
fn items(mut all: Value, key: &str) -> Result<Vec<Value>> {
    match all.get_mut(key).map(Value::take) {
        Some(Value::Array(items)) => Ok(items),
        _ => Err(Error::new(
            Status::InternalError,
            format!("the {key} walk gathered no list"),
        )),
    }
}

impl ClientCore {
    /// Any request; an `input_required` result ends with INPUT_REQUIRED.
    pub(super) fn request(
        self: &Arc<Self>,
        method: impl Into<Method>,
        params: Option<Value>,
        opts: &RequestOptions,
    ) -> Step {
        let method = method.into();
        let params = params.map(|p| Arc::new(p.into()));
        self.raw_then(
            method.clone(),
            params,
            opts,
            on_ok(move |result| {
                Step::Done(match is_input_required(&result) {
                    true => Err(input_required(
                        result.into_value(),
                        format!("{method}: the server needs input (input_required)"),
                    )),
                    false => Ok(result),
                })
            }),
        )
    }

    /// One request in the connection's era, its result's kind checked, then `next` with it
    /// (`input_required` results left to `next`). `next` joins the request's own continuation
    /// rather than being chained after it: one boxed continuation per request, not two.
    pub(super) fn raw_then(
        self: &Arc<Self>,
        method: Method,
        params: Option<Arc<Params>>,
        opts: &RequestOptions,
        next: impl FnOnce(Result<Reply>) -> Step + Send + 'static,
    ) -> Step {
        self.send_raw_then(method, params, opts, Leg::Call, None, next)
    }

    /// One leg of a call, ending with its result: a task's poll (`Leg::TaskPoll`) is never
    /// cancelled on the wire (the call's cancel becomes one `tasks/cancel` instead) and carries
    /// no progress token; a listen (`listen` set) has no timeout but its own.
    pub(super) fn send_raw(
        self: &Arc<Self>,
        method: Method,
        params: Option<Arc<Params>>,
        opts: &RequestOptions,
        leg: Leg,
        listen: Option<Arc<ListenWatch>>,
    ) -> Step {
        self.send_raw_then(method, params, opts, leg, listen, Step::Done)
    }

    /// `send_raw`, then `next` with the result (see `raw_then`).
    fn send_raw_then(
        self: &Arc<Self>,
        method: Method,
        params: Option<Arc<Params>>,
        opts: &RequestOptions,
        leg: Leg,
        listen: Option<Arc<ListenWatch>>,
        next: impl FnOnce(Result<Reply>) -> Step + Send + 'static,
    ) -> Step {
        if let Some(params) = &params {
            if !params.tree.is_object() {
                return next(Err(Error::invalid("params must be a JSON object")));
            }
        }
        if let Err(error) = crate::fork_guard::check() {
            return next(Err(error));
        }
        // A listen made by hand (`Request::Other`, to start it without a waiting thread) is a
        // listen all the same: the router must know it, or its notices are dropped.
        let listen = listen.or_else(|| (method == methods::LISTEN).then(Default::default));
        if self.needs_healing() {
            // Connecting again may wait: where blocking is allowed, never on a started
            // request's caller or on the completion thread.
            let (core, opts) = (self.clone(), opts.clone());
            let deadline = match &listen {
                Some(_) => opts
                    .timeout
                    .filter(|t| !t.is_zero())
                    .and_then(|t| Instant::now().checked_add(t)),
                None => self.request_deadline(&opts),
            };
            let heal = {
                let (core, opts) = (core.clone(), opts.clone());
                move || {
                    core.heal(&opts, deadline)
                        .map(|()| Reply::from(Value::Null))
                }
            };
            return Step::Blocking {
                job: Box::new(heal),
                then: Box::new(move |healed| match healed {
                    Ok(_) => core.send_on_session(method, params, &opts, leg, listen, next),
                    Err(error) => next(Err(error)),
                }),
            };
        }
        self.send_on_session(method, params, opts, leg, listen, next)
    }

    /// `send_raw_then` on the current session as it is.
    fn send_on_session(
        self: &Arc<Self>,
        method: Method,
        params: Option<Arc<Params>>,
        opts: &RequestOptions,
        leg: Leg,
        listen: Option<Arc<ListenWatch>>,
        next: impl FnOnce(Result<Reply>) -> Step + Send + 'static,
    ) -> Step {
        let (session, busy) = match self.route() {
            Ok(Route::Session(session, busy)) => (session, busy),
            Ok(Route::ConnectFirst) => {
                // The request pays for the connect, where it may block (see `lazy.rs`), then
                // goes on with the time it has left.
                let started = Instant::now();
                let (core, opts) = (self.clone(), opts.clone());
                let connecting = (core.clone(), opts.clone());
                return Step::Blocking {
                    job: Box::new(move || {
                        let (core, opts) = connecting;
                        core.connect_for_request(&opts, started)
                            .map(|()| Reply::from(Value::Null))
                    }),
                    then: Box::new(move |connected| {
                        match connected.and_then(|_| core.request_time_left(&opts, started)) {
                            Ok(opts) => {
                                core.send_raw_then(method, params, &opts, leg, listen, next)
                            }
                            Err(error) => next(Err(error)),
                        }
                    }),
                };
            }
            Err(error) => return next(Err(error)),
        };
        let progress_token = match leg {
            Leg::Call => self.progress_token(opts),
            Leg::TaskPoll => None,
        };
        let params = with_meta(params, opts, progress_token.as_ref());
        let default_timeout = self.options.timeout.filter(|_| listen.is_none());
        let timeout = match opts.timeout.or(default_timeout) {
            Some(Duration::ZERO) => None,
            other => other,
        };
        let call = CallOptions {
            cancellation: opts.cancellation.clone(),
            timeout,
            reset_timeout_on_progress: opts.reset_timeout_on_progress,
            max_total: opts.max_total_timeout,
            cancel_on_wire: leg == Leg::Call,
            progress: progress_token.map(|token| (token, opts.on_progress.clone())),
            listen,
        };
        let connection = &session.connection;
        let sent = match &session.envelope {
            None => Step::send(connection, method.clone(), params, None, call),
            Some(envelope) => {
                let (core, connection, method) = (self.clone(), connection.clone(), method.clone());
                let first = Some(envelope.clone());
                let send = Step::send(
                    &connection,
                    method.clone(),
                    params.clone(),
                    first,
                    call.clone(),
                );
                send.and_then(move |result| match result {
                    // The server wants another version: retry once with one we share.
                    Err(e) if e.code == Some(UNSUPPORTED_VERSION) => {
                        let supported =
                            supported_versions(e.data.as_ref().and_then(|d| d.get("supported")));
                        match versions::mutual_modern(supported.iter().map(String::as_str)) {
                            Some(version) => {
                                let retry = Some(core.envelope(version));
                                Step::send(&connection, method, params, retry, call)
                            }
                            None => Step::Done(Err(e)),
                        }
                    }
                    other => Step::Done(other),
                })
            }
        };
        let core = self.clone();
        sent.and_then(move |result| {
            // The request has its answer: the server may go idle.
            drop(busy);
            if let Err(e) = &result {
                if e.status == Status::SessionExpired {
                    // The server forgot us: the next connect starts a new session. Closing the
                    // connection waits for its threads: never on one of them.
                    return Step::defer(move || {
                        core.forget_session(&session);
                        next(result)
                    });
                }
            }
            next(result.and_then(|result| match result.result_type() {
                None => Ok(result),
                Some(Value::String(kind)) if kind == "complete" || kind == "input_required" => {
                    Ok(result)
                }
                // Only a call that declared the extension, and only for what it covers.
                Some(Value::String(kind)) if kind == "task" && core.accepts_task(&method) => {
                    Ok(result)
                }
                Some(other) => Err(Error::protocol(format!(
                    "{method}: unknown resultType {other}"
                ))),
            }))
        })
    }

    /// The options with the call's progress token fixed, so every leg of the call (input
    /// rounds, a task's status) reports under one token.
    pub(super) fn with_progress_token(&self, opts: &RequestOptions) -> RequestOptions {
        RequestOptions {
            progress_token: self.progress_token(opts),
            ..opts.clone()
        }
    }

    /// The call's progress token: the host's, or one we make when the host wants progress.
    fn progress_token(&self, opts: &RequestOptions) -> Option<Value> {
        if opts.progress_token.is_some() {
            return opts.progress_token.clone();
        }
        let wanted = opts.on_progress.is_some() || self.options.callbacks.on_progress.is_some();
        wanted.then(|| {
            let n = self
                .next_progress_token
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Value::from(format!("mcpc-{n}"))
        })
    }

    pub(super) fn complete_step(
        self: &Arc<Self>,
        reference: Value,
        argument: Value,
        context: Option<Value>,
        opts: &RequestOptions,
    ) -> Step {
        if !reference.is_object() || !argument.is_object() {
            return Step::Done(Err(Error::invalid(
                "completion ref and argument must be JSON objects",
            )));
        }
        let mut params = json!({ "ref": reference, "argument": argument });
        if let Some(context) = context {
            params["context"] = context;
        }
        self.request(methods::COMPLETE, Some(params), opts)
    }

    /// A request of the handshake era only (NOT_SUPPORTED, nothing sent, in the modern era).
    pub(super) fn handshake_only(
        self: &Arc<Self>,
        method: &'static str,
        params: Value,
        opts: &RequestOptions,
    ) -> Step {
        match self.is_modern() {
            true => Step::Done(Err(Error::new(
                Status::NotSupported,
                format!("{method} does not exist in the modern protocol era (2026-07-28) this connection speaks"),
            ))),
            false => self.request(method, Some(params), opts),
        }
    }

    /// One page of `tools/list`, invalid tools dropped.
    pub(super) fn list_tools_page(
        self: &Arc<Self>,
        cursor: Option<&str>,
        opts: &RequestOptions,
    ) -> Step {
        let core = self.clone();
        // Dropping a tool logs why (host code).
        self.list_page(methods::TOOLS_LIST, cursor, opts)
            .map_ok(move |mut page| {
                Step::defer(move || {
                    if let Some(Value::Array(tools)) = page.get_mut("tools") {
                        core.drop_invalid_tools(tools);
                        core.note_task_tools(tools);
                    }
                    Step::Done(Ok(page))
                })
            })
    }

    /// Every tool over all pages, invalid tools dropped.
    pub(super) fn all_tools(self: &Arc<Self>, opts: &RequestOptions) -> Step {
        let core = self.clone();
        self.all_pages(methods::TOOLS_LIST, "tools", opts)
            .map_ok(move |mut all| {
                Step::defer(move || {
                    if let Some(Value::Array(tools)) = all.get_mut("tools") {
                        core.drop_invalid_tools(tools);
                        core.note_task_tools(tools);
                    }
                    Step::Done(Ok(all))
                })
            })
    }

    /// Modern connections drop tools whose `x-mcp-header` annotations are invalid (SEP-2243)
    /// and log why; the other tools stay usable.
    fn drop_invalid_tools(&self, tools: &mut Vec<Value>) {
        if !self.is_modern() {
            return;
        }
        tools.retain(|tool| match mcp_header::check_tool(tool) {
            Ok(()) => true,
            Err(why) => {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
                self.log(
                    LogLevel::Warning,
                    &format!("dropping tool {name:?} from tools/list: {why}"),
                );
                false
            }
        });
    }

    pub(super) fn list_page(
        self: &Arc<Self>,
        method: &'static str,
        cursor: Option<&str>,
        opts: &RequestOptions,
    ) -> Step {
        if !opts.bypass_cache {
            if let Some(page) = self.cache.get(method, cursor) {
                return Step::Done(Ok(page.into()));
            }
        }
        let ticket = self.cache.ticket(method);
        let params = cursor.map(|cursor| json!({ "cursor": cursor }));
        let (core, cursor) = (self.clone(), cursor.map(str::to_owned));
        self.request(method, params, opts).map_ok(move |page| {
            if let Some(ticket) = ticket {
                core.cache.put(ticket, cursor.as_deref(), &page);
            }
            Step::Done(Ok(page))
        })
    }

    /// Fetches pages while the server gives a cursor, gathering `{key: [...]}`. Stops at a
    /// cursor seen before (a server that loops), and fails with PAGINATION_LIMIT past
    /// `max_pages`. The same options (and so the same cancellation token) serve every page; a
    /// cancel discards the pages so far.
    pub(super) fn all_pages(
        self: &Arc<Self>,
        method: &'static str,
        key: &'static str,
        opts: &RequestOptions,
    ) -> Step {
        let walk = Walk {
            method,
            key,
            opts: opts.clone(),
            items: Vec::new(),
            seen: HashSet::new(),
            page_number: 1,
        };
        self.next_page(walk, None)
    }

    fn next_page(self: &Arc<Self>, mut walk: Walk, cursor: Option<String>) -> Step {
        let core = self.clone();
        self.list_page(walk.method, cursor.as_deref(), &walk.opts)
            .map_ok(move |mut page| {
                let (method, key) = (walk.method, walk.key);
                match page.get_mut(key).map(Value::take) {
                    Some(Value::Array(page_items)) => walk.items.extend(page_items),
                    None | Some(Value::Null) => {}
                    Some(_) => {
                        return Step::Done(Err(Error::protocol(format!(
                            "{method}: `{key}` is not an array"
                        ))))
                    }
                }
                let next = match page.get("nextCursor") {
                    None | Some(Value::Null) => return walk.done(),
                    Some(Value::String(next)) => next.clone(),
                    Some(_) => {
                        return Step::Done(Err(Error::protocol(format!(
                            "{method}: nextCursor is not a string"
                        ))))
                    }
                };
                if walk.seen.contains(&next) {
                    return walk.done();
                }
                if walk.page_number >= core.options.max_pages {
                    return Step::Done(Err(Error::new(
                        Status::PaginationLimit,
                        format!(
                            "{method}: the server returned more than {} pages; raise max_pages if this is expected",
                            core.options.max_pages
                        ),
                    )));
                }
                walk.seen.insert(next.clone());
                walk.page_number += 1;
                core.next_page(walk, Some(next))
            })
    }
}

/// An all-pages walk in progress.
struct Walk {
    method: &'static str,
    key: &'static str,
    opts: RequestOptions,
    items: Vec<Value>,
    seen: HashSet<String>,
    page_number: usize,
}

impl Walk {
    fn done(self) -> Step {
        let mut all = Map::new();
        all.insert(self.key.to_owned(), Value::Array(self.items));
        Step::Done(Ok(Value::Object(all).into()))
    }
}

/// Adds the options' `_meta` entries (and progress token) to the params (a copy of them when
/// they are shared, as a call's params are between its `input_required` rounds).
fn with_meta(
    params: Option<Arc<Params>>,
    opts: &RequestOptions,
    progress_token: Option<&Value>,
) -> Option<Arc<Params>> {
    if opts.meta.is_none() && progress_token.is_none() {
        return params;
    }
    let mut meta = opts.meta.clone().unwrap_or_default();
    if let Some(token) = progress_token {
        meta.insert("progressToken".into(), token.clone());
    }
    let mut params = params.map_or_else(Params::empty, Arc::unwrap_or_clone);
    params.tree["_meta"] = Value::Object(meta);
    Some(Arc::new(params))
}
